package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Workers say where attempts' agents run when not on this machine (SPEC §18): on worker
// machines that take jobs from a NATS JetStream server, either one watch starts itself
// (Serve, like `watch --serve-workers`) or an existing one (URL, like `watch --workers`).
// Without either, every agent runs here.
type Workers struct {
	// Serve is the host:port the embedded server listens on for workers.
	Serve string `yaml:"serve"`
	// URL is an existing NATS server or cluster: nats://host:port, several separated by
	// commas.
	URL string `yaml:"url"`
	// Token is the workers' password of the embedded server; else
	// $ORCHESTRATOR_WORKER_TOKEN, else one watch makes and keeps.
	Token string `yaml:"token"`
	// Credentials are the authority's user and password on URL, as user:password.
	Credentials string `yaml:"credentials"`
	// AckWait is how long a worker may go silent before its job goes to another; 0 is the
	// default (30s). MaxDeliver is how many times a job is handed out at most; 0 is the
	// default (5).
	AckWait    Duration `yaml:"ack_wait"`
	MaxDeliver int      `yaml:"max_deliver"`
	// Replicas is how many servers of the cluster at URL keep the workers' streams and
	// buckets (JetStream replicas, 1 to 5; 0 is 1): 3 keeps the work going when one of
	// three servers is lost. The embedded server is one server: 1 only.
	Replicas int `yaml:"replicas"`
}

// Enabled reports whether attempts' agents run on workers.
func (w Workers) Enabled() bool { return w.Serve != "" || w.URL != "" }

// User returns the user and password of Credentials ("" and "" when it names none).
func (w Workers) User() (user, password string) {
	user, password, _ = strings.Cut(w.Credentials, ":")
	return user, password
}

// checkWorkers returns the value errors of the workers settings.
func (c *Config) checkWorkers() Errors {
	var errs Errors
	bad := func(msg string, keys ...string) {
		errs = append(errs, &Error{Path: c.path, Line: max(c.Line(keys...), 1), Msg: msg})
	}
	w := c.Workers
	if w.Serve != "" && w.URL != "" {
		bad("workers: serve and url both set: serve workers from this watch, or use an existing server, not both", "workers", "url")
	}
	if w.Serve != "" {
		if err := CheckServeAddr(w.Serve); err != nil {
			bad(fmt.Sprintf("workers.serve: %v", err), "workers", "serve")
		}
	}
	if w.URL != "" {
		if err := CheckNATSURL(w.URL); err != nil {
			bad(fmt.Sprintf("workers.url: %v", err), "workers", "url")
		}
	}
	if w.Credentials != "" {
		if u, p := w.User(); u == "" || p == "" {
			bad("workers.credentials: must be user:password", "workers", "credentials")
		}
	}
	if w.AckWait.Duration < 0 {
		bad(fmt.Sprintf("workers.ack_wait: %s: must not be negative", w.AckWait.Duration), "workers", "ack_wait")
	}
	if w.MaxDeliver < 0 {
		bad(fmt.Sprintf("workers.max_deliver: %d: must not be negative", w.MaxDeliver), "workers", "max_deliver")
	}
	switch {
	case w.Replicas < 0 || w.Replicas > 5:
		bad(fmt.Sprintf("workers.replicas: %d: must be 1 to 5", w.Replicas), "workers", "replicas")
	case w.Replicas > 1 && w.URL == "":
		bad(fmt.Sprintf("workers.replicas: %d: the embedded server is one server; replicas need a cluster (workers.url)", w.Replicas), "workers", "replicas")
	}
	return errs
}

// CheckServeAddr says what is wrong with the address the embedded workers' server is to
// listen on (host:port; port 0 picks a free one), or nil.
func CheckServeAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// CheckNATSURL says what is wrong with the URL of a NATS server (nats://host:port, or
// several separated by commas), or nil.
func CheckNATSURL(s string) error {
	for _, one := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" {
			return fmt.Errorf("%q is not a URL like nats://host:4222", one)
		}
		switch u.Scheme {
		case "nats", "tls":
		default:
			return fmt.Errorf("%q: the scheme must be nats or tls", one)
		}
		if u.User != nil {
			return fmt.Errorf("%q: give the user and password in workers.credentials, not in the URL", one)
		}
	}
	return nil
}
