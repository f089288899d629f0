package watch

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// defaultServices are the addresses of the services a task's Required Services usually
// names, on this machine; config `services` adds to them and overrides them.
var defaultServices = map[string]string{
	"postgres":      "localhost:5432",
	"postgresql":    "localhost:5432",
	"redis":         "localhost:6379",
	"mysql":         "localhost:3306",
	"mariadb":       "localhost:3306",
	"mongodb":       "localhost:27017",
	"mongo":         "localhost:27017",
	"ollama":        "localhost:11434",
	"rabbitmq":      "localhost:5672",
	"elasticsearch": "localhost:9200",
	"memcached":     "localhost:11211",
	"kafka":         "localhost:9092",
	"nats":          "localhost:4222",
	"minio":         "localhost:9000",
}

// serviceDialTimeout bounds each reachability check.
const serviceDialTimeout = time.Second

// unreachableServices checks a task's Required Services (SPEC §3.3) before its agent
// starts: each must accept a TCP connection. A service is a name (its address from config
// `services`, else from defaultServices), a host:port, or a URL. It returns one line per
// service that cannot be reached, naming it; none means the task may start.
func unreachableServices(value string, configured map[string]string) []string {
	var out []string
	for _, name := range queue.List(value) {
		addr, err := serviceAddress(name, configured)
		if err == nil {
			var c net.Conn
			if c, err = net.DialTimeout("tcp", addr, serviceDialTimeout); err == nil {
				c.Close()
				continue
			}
			err = fmt.Errorf("%s is not reachable at %s", name, addr)
		}
		out = append(out, err.Error())
	}
	return out
}

// serviceAddress returns the host:port of a Required Services entry.
func serviceAddress(name string, configured map[string]string) (string, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	for k, a := range configured {
		if strings.ToLower(k) == key {
			return hostPort(a)
		}
	}
	if a, ok := defaultServices[key]; ok {
		return a, nil
	}
	if a, err := hostPort(name); err == nil {
		return a, nil
	}
	return "", fmt.Errorf("%s is not a known service: give its address in config.yaml (services: {%s: host:port})", name, key)
}

// hostPort reads host:port, or a URL with a host and a port.
func hostPort(s string) (string, error) {
	s = strings.TrimSpace(s)
	if u, err := url.Parse(s); err == nil && u.Host != "" && u.Port() != "" {
		return u.Host, nil
	}
	if _, port, err := net.SplitHostPort(s); err == nil && port != "" {
		return s, nil
	}
	return "", fmt.Errorf("%q is not host:port", s)
}
