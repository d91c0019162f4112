// Command replicas runs two replicas of an agent service, two processes
// that share one Redis: a rate limit of 3 quotes a minute holds across
// both, and a refund that one replica paused for a human's approval is
// approved through the other and then runs, once, in the first.
//
// It starts a redis-server of its own (the Debian package redis-server),
// or uses the one at $REDIS_ADDR.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/redistoolset"
	"github.com/redis/go-redis/v9"
)

// roleEnv names the replica a child process is; addrEnv its Redis.
const (
	roleEnv = "REPLICAS_ROLE"
	addrEnv = "REPLICAS_REDIS"
)

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		if err := serve(role, os.Getenv(addrEnv), os.Stdin, os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	if err := run(os.Stdout, self); err != nil {
		log.Fatal(err)
	}
}

// errNoRedis says that there is no Redis to run on.
var errNoRedis = errors.New("redis-server is not installed (Debian package redis-server) and REDIS_ADDR is not set")

// run starts Redis, if need be, and the two replicas (self run again),
// and has them serve the requests of the demo, writing what they answer
// to w.
func run(w io.Writer, self string) error {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		stop, a, err := startRedis()
		if err != nil {
			return err
		}
		defer stop()
		addr = a
	}
	a, err := startReplica(self, "A", addr)
	if err != nil {
		return err
	}
	defer a.close()
	b, err := startReplica(self, "B", addr)
	if err != nil {
		return err
	}
	defer b.close()
	for _, req := range []struct {
		r   *replica
		cmd string
	}{
		{a, "quote ACME"}, {a, "quote ACME"}, {b, "quote ACME"}, {b, "quote ACME"},
		{a, "refund order-7"},
		{b, "approve order-7"},
		{a, "refund order-7"},
	} {
		out, err := req.r.do(req.cmd)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "replica %s> %s\n%s", req.r.name, req.cmd, out)
	}
	return nil
}

// replica is a child process serving requests read from its stdin.
type replica struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
}

func startReplica(self, name, addr string) (*replica, error) {
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), roleEnv+"="+name, addrEnv+"="+addr)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting replica %s: %w", name, err)
	}
	return &replica{name: name, cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

// do sends a request and returns the answer, the lines up to "." alone.
func (r *replica) do(req string) (string, error) {
	if _, err := fmt.Fprintln(r.in, req); err != nil {
		return "", fmt.Errorf("replica %s: %w", r.name, err)
	}
	var b strings.Builder
	for {
		line, err := r.out.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("replica %s: reading its answer: %w", r.name, err)
		}
		if line == ".\n" {
			return b.String(), nil
		}
		b.WriteString("  " + line)
	}
}

func (r *replica) close() {
	r.in.Close()
	_ = r.cmd.Wait()
}

// serve is a replica: it handles the requests read from in, one a line,
// and ends each answer with a line ".".
func serve(name, addr string, in io.Reader, out io.Writer) error {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	const prefix = "shop:" // every key of this app starts with it
	store := redistoolset.NewRunStore(client, &redistoolset.RunStoreOptions{Prefix: prefix})
	limiter := redistoolset.NewRateLimiter(client, &redistoolset.RateLimiterOptions{Prefix: prefix})

	quote := toolset.NewTool("quote", "Get the latest price of a stock.",
		func(_ context.Context, in struct {
			Symbol string `json:"symbol"`
		}) (string, error) {
			return in.Symbol + " trades at 101.50", nil
		},
		// 3 a minute for the whole service, not per replica.
		toolset.WithRateLimit(toolset.RateLimit{Requests: 3, Interval: time.Minute, Reject: true, Limiter: limiter}))
	refund := toolset.NewTool("refund", "Refund an order.",
		func(_ context.Context, in struct {
			Order  string `json:"order"`
			Amount int    `json:"amount"`
		}) (string, error) {
			return fmt.Sprintf("refunded %d on %s by replica %s", in.Amount, in.Order, name), nil
		},
		toolset.WithApprovalRequired(toolset.Always))

	sc := bufio.NewScanner(in)
	for sc.Scan() {
		verb, arg, _ := strings.Cut(sc.Text(), " ")
		var err error
		switch verb {
		case "quote":
			err = callOnce(ctx, out, quote, toolset.ToolCall{ID: "q", Name: "quote", Args: json.RawMessage(`{"symbol":` + strconv.Quote(arg) + `}`)})
		case "refund":
			// A request of the agent's loop for run arg: the model asks
			// for a refund.
			err = step(ctx, out, store, arg, refund)
		case "approve":
			// A request of the approval UI: a human approves what the run
			// waits for.
			err = approve(ctx, out, store, arg)
		default:
			err = fmt.Errorf("unknown request %q", verb)
		}
		if err != nil {
			fmt.Fprintln(out, "error:", err)
		}
		fmt.Fprintln(out, ".")
	}
	return sc.Err()
}

// callOnce runs one call of tool outside any run and writes what the
// model would see.
func callOnce(ctx context.Context, out io.Writer, tool toolset.Tool, call toolset.ToolCall) error {
	res, err := tool.Execute(ctx, call)
	if text, ok := toolset.ErrorText(err); ok {
		fmt.Fprintln(out, "model sees:", text)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "result:", res)
	return nil
}

var refundCall = toolset.ToolCall{ID: "call_1", Name: "refund", Args: json.RawMessage(`{"order":"A-7","amount":30}`)}

// step resumes run id, lets the model's refund call through the tools, and
// suspends the run if the call waits for approval, or ends it.
func step(ctx context.Context, out io.Writer, store toolset.RunStore, id string, refund toolset.Tool) error {
	run, err := toolset.ResumeRun(ctx, store, id)
	if err != nil {
		return err
	}
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "shop", refund)
	if err != nil {
		run.End()
		return err
	}
	res, err := tools.Execute(turn, refundCall)
	var need *toolset.ApprovalRequiredError
	if errors.As(err, &need) {
		fmt.Fprintln(out, "paused: call", need.Call.ID, "waits for approval; run saved")
		return run.Suspend(ctx)
	}
	defer run.End()
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "result:", res)
	return nil
}

// approve resumes run id, approves every call it waits for, and lets it go.
func approve(ctx context.Context, out io.Writer, store toolset.RunStore, id string) error {
	run, err := toolset.ResumeRun(ctx, store, id)
	if err != nil {
		return err
	}
	for _, p := range run.PendingApprovals() {
		fmt.Fprintf(out, "approved: %s %s %s\n", p.CallID, p.Tool, p.Args)
		run.RecordApproval(p.Call())
	}
	return run.Suspend(ctx)
}

// startRedis starts a redis-server on a free loopback port, keeping
// nothing on disk, and returns a function that stops it.
func startRedis() (stop func(), addr string, err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", errNoRedis
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "replicas-redis-")
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		os.RemoveAll(dir)
	}
	addr = "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			stop()
			return nil, "", fmt.Errorf("redis-server on %s did not answer in 10s", addr)
		}
	}
	return stop, addr, nil
}
