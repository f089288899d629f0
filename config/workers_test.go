package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWorkersSettings(t *testing.T) {
	c, err := Load(write(t, "jobs: 2\nworkers:\n  url: nats://a:4222, nats://b:4222\n  credentials: authority:secret\n  ack_wait: 2s\n  max_deliver: 3\n  replicas: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Workers
	if !w.Enabled() || w.URL != "nats://a:4222, nats://b:4222" || w.AckWait.Duration != 2*time.Second || w.MaxDeliver != 3 || w.Replicas != 3 {
		t.Errorf("workers = %+v", w)
	}
	if u, p := w.User(); u != "authority" || p != "secret" {
		t.Errorf("User() = %q, %q", u, p)
	}
	if Default().Workers.Enabled() {
		t.Error("workers are on by default; want every agent here")
	}
}

// TestWorkersBadValuesNameTheirLine: each bad value of the workers settings is refused at
// the line that sets it.
func TestWorkersBadValuesNameTheirLine(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		line       int
		want       string
	}{
		{"both", "workers:\n  serve: 127.0.0.1:4222\n  url: nats://h:4222\n", 3, "serve and url both set"},
		{"serve not host:port", "jobs: 1\nworkers: {serve: nowhere}\n", 2, `workers.serve: "nowhere" is not host:port`},
		{"serve port", "workers:\n  serve: 127.0.0.1:99999\n", 2, "is not a number from 0 to 65535"},
		{"url scheme", "workers:\n  url: http://h:4222\n", 2, "the scheme must be nats or tls"},
		{"url not a url", "workers:\n  url: h4222\n", 2, "is not a URL like nats://host:4222"},
		{"url with password", "workers:\n  url: nats://u:p@h:4222\n", 2, "not in the URL"},
		{"credentials", "workers:\n  url: nats://h:4222\n  credentials: justauser\n", 3, "must be user:password"},
		{"ack_wait", "workers:\n  serve: 127.0.0.1:0\n  ack_wait: -1s\n", 3, "must not be negative"},
		{"max_deliver", "workers:\n  serve: 127.0.0.1:0\n\n  max_deliver: -2\n", 4, "must not be negative"},
		{"replicas range", "workers:\n  url: nats://h:4222\n  replicas: 7\n", 3, "must be 1 to 5"},
		{"replicas without a cluster", "workers:\n  serve: 127.0.0.1:0\n  replicas: 3\n", 3, "replicas need a cluster"},
		{"unknown key", "workers:\n  servе_typo: x\n", 2, "unknown key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := write(t, tt.text)
			_, err := Load(path)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Load = %v, want a *config.Error", err)
			}
			if e.Path != path || e.Line != tt.line || !strings.Contains(e.Msg, tt.want) {
				t.Errorf("error %q at line %d, want line %d saying %q", err, e.Line, tt.line, tt.want)
			}
		})
	}
}
