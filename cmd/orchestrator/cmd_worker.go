package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/workers"
	"github.com/spf13/cobra"
)

// tokenEnv names the variable that holds the workers' token, so that it need not be on a
// command line (which other users of the machine can read).
const tokenEnv = "ORCHESTRATOR_WORKER_TOKEN"

// workerOptions are the options of `orchestrator worker`.
type workerOptions struct {
	*globalOptions
	Connect string
	Token   string
	Jobs    int
	Cache   string
	Name    string
}

func newWorkerCommand(g *globalOptions) *cobra.Command {
	opts := &workerOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "worker --connect URL",
		Short: "Run agents for a watch on another machine: take attempt jobs from its NATS server and return the candidates",
		Long: `worker connects to the NATS JetStream server of a watch (or a cluster it uses), takes
attempt jobs from its work queue, and runs each job's agent in a checkout of the job's base
commit, in the agent sandbox when bubblewrap works here. What the agent changed is returned
as a candidate commit with its log, output and marker; the watch judges and lands it as it
would a local attempt: nothing a worker says is evidence.

The base commits come as git bundles, each holding only what the previous one lacks: the
cache keeps what was fetched, so a later base costs only its new objects. While an agent
runs, the worker tells the server it is still at work; a worker that dies loses its jobs to
another worker after the server's deadline. The token is the workers' password; it may be
given in $ORCHESTRATOR_WORKER_TOKEN instead of --token.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runWorker(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Connect, "connect", "", "URL of the NATS server (nats://host:port)")
	c.Flags().StringVar(&opts.Token, "token", "", "the workers' token (default: $"+tokenEnv+")")
	c.Flags().IntVar(&opts.Jobs, "jobs", 1, "how many agents run at once")
	c.Flags().StringVar(&opts.Cache, "cache", "", "the worker's cache folder (default: the user's cache folder/orchestrator/worker)")
	c.Flags().StringVar(&opts.Name, "name", "", "the worker's name, unique among the workers (default: host name and process ID)")
	return c
}

func runWorker(ctx context.Context, opts *workerOptions) error {
	if opts.Connect == "" {
		return usageErrorf("worker: --connect URL is required")
	}
	if opts.Jobs < 1 {
		return usageErrorf("worker: --jobs must be at least 1")
	}
	token := opts.Token
	if token == "" {
		token = os.Getenv(tokenEnv)
	}
	cache := opts.Cache
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return usageErrorf("worker: no cache folder: %v (give --cache)", err)
		}
		cache = filepath.Join(dir, "orchestrator", "worker")
	}
	name := opts.Name
	if name == "" {
		host, _ := os.Hostname()
		name = host + "-" + strconv.Itoa(os.Getpid())
	}
	sandbox := agents.BwrapAvailable() == nil
	if !sandbox {
		fmt.Fprintf(opts.Stderr, "orchestrator worker: agents run without a sandbox: %v\n", agents.BwrapAvailable())
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := &workers.Worker{
		Name: name, URL: opts.Connect, Token: token, CacheDir: cache, Jobs: opts.Jobs,
		Run: workers.AgentRunner(workers.AgentOptions{Sandbox: sandbox}),
		Logf: func(format string, args ...any) {
			fmt.Fprintf(opts.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
		},
	}
	fmt.Fprintf(opts.Stderr, "worker %s: connecting to %s, %d job(s) at once, cache %s\n", name, opts.Connect, opts.Jobs, cache)
	if err := w.Serve(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Canceled
	}
	return nil
}

// workersOptions are the options of `orchestrator workers`.
type workersOptions struct {
	*globalOptions
	Connect    string
	Token      string
	JSON       bool
	NATSConfig bool
}

func newWorkersCommand(g *globalOptions) *cobra.Command {
	opts := &workersOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "workers --connect URL | --nats-config",
		Short: "List the workers connected to a NATS server and the attempts they run",
		Long: `workers lists the workers whose heartbeat the server holds (a worker that stopped
drops out within 15 seconds): their name, host, how many jobs they take at once, since when
they are connected, and the attempts they run now.

With --nats-config it prints instead the authorization block an existing nats-server or
cluster needs for watch --workers: the authority's user and the workers' user with their
permissions. The workers' password is the token (--token or $ORCHESTRATOR_WORKER_TOKEN);
the authority's is $ORCHESTRATOR_AUTHORITY_PASSWORD; either is a placeholder to fill in
when not given.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runWorkers(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Connect, "connect", "", "URL of the NATS server (nats://host:port)")
	c.Flags().StringVar(&opts.Token, "token", "", "the workers' token (default: $"+tokenEnv+")")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	c.Flags().BoolVar(&opts.NATSConfig, "nats-config", false, "print the authorization block of a nats-server configuration for watch --workers")
	return c
}

func runWorkers(ctx context.Context, opts *workersOptions) error {
	token := opts.Token
	if token == "" {
		token = os.Getenv(tokenEnv)
	}
	if opts.NATSConfig {
		authority := cmp.Or(os.Getenv("ORCHESTRATOR_AUTHORITY_PASSWORD"), "<the authority's password: workers.credentials>")
		_, err := io.WriteString(opts.Stdout, workers.ClusterAuthorization(authority, cmp.Or(token, "<the workers' token>")))
		return err
	}
	if opts.Connect == "" {
		return usageErrorf("workers: --connect URL is required")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := workers.ListWorkers(ctx, opts.Connect, workers.Credentials{User: workers.WorkerUser, Password: token})
	if err != nil {
		return err
	}
	if opts.JSON {
		if list == nil {
			list = []workers.Heartbeat{}
		}
		return writeJSON(opts.Stdout, list)
	}
	w := tabwriter.NewWriter(opts.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "WORKER\tHOST\tJOBS\tSINCE\tRUNNING")
	for _, hb := range list {
		running := strings.Join(hb.Running, " ")
		if running == "" {
			running = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", hb.Name, hb.Host, hb.Jobs, hb.Since.Local().Format("2006-01-02 15:04:05"), running)
	}
	return w.Flush()
}
