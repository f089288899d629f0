package workers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// The two users of an embedded server (Serve) and of the credentials the protocol expects
// from a cluster: the authority, which may do everything, and the workers, which may take
// jobs and return outcomes and nothing else (workerPermissions).
const (
	AuthorityUser = "authority"
	WorkerUser    = "worker"
)

// Credentials are a user and password of the NATS server. An empty User connects without
// credentials (a server that asks for none).
type Credentials struct {
	User     string
	Password string
}

// ServeOptions say how to start the embedded JetStream server.
type ServeOptions struct {
	// Addr is host:port to listen on for workers; port 0 picks a free one. "" is
	// 127.0.0.1:4222.
	Addr string
	// StoreDir is where JetStream keeps its streams: the orchestrator's state folder the
	// caller names. Jobs, bundles and accepted outcomes outlive a restart there.
	StoreDir string
	// Token is the workers' password (user WorkerUser). Required.
	Token string
	// AuthorityToken is the authority's password (user AuthorityUser); "" makes a random
	// one, which Server.Authority returns.
	AuthorityToken string
}

// A Server is a running embedded JetStream server.
type Server struct {
	srv       *server.Server
	authority Credentials
}

// ErrNoToken is the error of Serve without a token: workers must authenticate.
var ErrNoToken = errors.New("serve workers: a token is required")

// Serve starts an embedded NATS server with JetStream, its storage in o.StoreDir, that
// requires a user and password of every client: AuthorityUser for the authority (the
// watch loop, through a Dispatcher), WorkerUser with o.Token for workers. It returns once
// the server accepts connections; Close stops it. ctx bounds the start only.
func Serve(ctx context.Context, o ServeOptions) (*Server, error) {
	if o.Token == "" {
		return nil, ErrNoToken
	}
	if o.StoreDir == "" {
		return nil, errors.New("serve workers: no store folder")
	}
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:4222"
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("serve workers: %w", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("serve workers: port %q: %w", portText, err)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	auth := Credentials{User: AuthorityUser, Password: o.AuthorityToken}
	if auth.Password == "" {
		auth.Password = randomToken()
	}
	opts := &server.Options{
		ServerName: "orchestrator",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoSigs:     true,
		NoLog:      true,
		// Outcomes carry no large part (bundles and logs go through the object store).
		MaxPayload: 1 << 20,
		Users: []*server.User{
			{Username: AuthorityUser, Password: auth.Password},
			{Username: WorkerUser, Password: o.Token, Permissions: workerPermissions()},
		},
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("serve workers: %w", err)
	}
	srv.Start()
	wait := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		return nil, fmt.Errorf("serve workers: the server on %s did not start", addr)
	}
	return &Server{srv: srv, authority: auth}, nil
}

// URL returns the URL workers connect to.
func (s *Server) URL() string { return s.srv.ClientURL() }

// Authority returns the authority's credentials, for NewDispatcher.
func (s *Server) Authority() Credentials { return s.authority }

// Close stops the server and waits until it has.
func (s *Server) Close() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}

// workerPermissions are what a worker may not do: publish jobs or read the job stream
// other than through the shared consumer (a job carries its secret), make or change
// streams and consumers, write base bundles, decide what was accepted, or acknowledge
// the authority's outcomes. What is left is taking jobs, acknowledging them, writing
// results, publishing outcomes and its heartbeat, and reading bundles and heartbeats.
//
// A worker still receives its replies on an _INBOX subject, which another holder of the
// worker token could subscribe to as well: workers that do not trust each other need
// accounts of their own (a cluster's credentials), not one shared token.
func workerPermissions() *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Deny: []string{
			jobSubject, jobSubject + ".>",
			"$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>", "$JS.API.STREAM.DELETE.>",
			"$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>",
			"$JS.API.STREAM.MSG.GET." + jobStream,
			"$JS.API.DIRECT.GET." + jobStream, "$JS.API.DIRECT.GET." + jobStream + ".>",
			"$JS.API.CONSUMER.CREATE." + jobStream, "$JS.API.CONSUMER.CREATE." + jobStream + ".>",
			"$JS.API.CONSUMER.DURABLE.CREATE." + jobStream + ".>",
			"$JS.API.CONSUMER.DELETE." + jobStream + ".>", "$JS.API.CONSUMER.DELETE." + outcomeStream + ".>",
			"$JS.API.CONSUMER.PAUSE.>",
			"$JS.API.CONSUMER.CREATE." + outcomeStream, "$JS.API.CONSUMER.CREATE." + outcomeStream + ".>",
			"$JS.API.CONSUMER.DURABLE.CREATE." + outcomeStream + ".>",
			"$JS.API.CONSUMER.MSG.NEXT." + outcomeStream + ".>",
			"$JS.ACK." + outcomeStream + ".>",
			"$O." + basesBucket + ".>",
			"$KV." + attemptsBucket + ".>", "$KV." + acceptedBucket + ".>",
		}},
		Subscribe: &server.SubjectPermission{Deny: []string{
			jobSubject, jobSubject + ".>", outcomeSubject + ".>",
		}},
	}
}

// connect connects to url with creds, naming the connection name.
func connect(url string, creds Credentials, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if creds.User != "" {
		opts = append(opts, nats.UserInfo(creds.User, creds.Password))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", url, err)
	}
	return nc, nil
}

// randomToken returns 32 random hex digits.
func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ClusterAuthorization returns the authorization block of a nats-server configuration file
// that gives an existing server or cluster the protocol's two users, as Serve has them: the
// authority (user AuthorityUser and its password, for `watch --workers` with
// `workers.credentials`) and the workers (WorkerUser with the workers' token), with the
// workers' permissions (workerPermissions).
func ClusterAuthorization(authorityPassword, workerToken string) string {
	p := workerPermissions()
	list := func(subjects []string) string {
		q := make([]string, len(subjects))
		for i, s := range subjects {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return fmt.Sprintf(`authorization {
  users = [
    {user: %q, password: %q}
    {user: %q, password: %q, permissions: {
      publish: {deny: %s}
      subscribe: {deny: %s}
    }}
  ]
}
`, AuthorityUser, authorityPassword, WorkerUser, workerToken, list(p.Publish.Deny), list(p.Subscribe.Deny))
}
