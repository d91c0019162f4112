package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mesh"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/nats-io/nats.go"
)

// meshClient is an agent's client of the mesh, with its connection.
type meshClient struct {
	nc     *nats.Conn
	client *mesh.Client
}

// envAgentName names the agent on the broker; by default a random name.
const envAgentName = "TOOLSET_BROKER_AGENT"

// meshClient connects to the broker and asks the runtimes what they
// serve.
func (bf *brokerFlags) client(ctx context.Context, logger *slog.Logger) (*meshClient, error) {
	nc, err := bf.connect(ctx, "toolset-agent", logger)
	if err != nil {
		return nil, err
	}
	// An agent user of a role's grant (see mesh's ROLES.md) is named:
	// its responses come on subjects that hold its name.
	agent, _ := os.LookupEnv(envAgentName)
	c, err := mesh.NewClient(ctx, nc, &mesh.ClientOptions{Namespace: bf.namespace, Agent: agent, Logger: logger})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &meshClient{nc: nc, client: c}, nil
}

func (m *meshClient) close() {
	if m == nil {
		return
	}
	_ = m.client.Close()
	m.nc.Close()
}

// packages are the runtimes' toolsets as an agent file's packages.
func (m *meshClient) packages() meshPackages { return meshPackages{m.client} }

// meshPackages are a mesh client's toolsets as agentfile.Packages.
type meshPackages struct{ c *mesh.Client }

func (p meshPackages) Info(name string) (toolpkg.Info, error) { return p.c.Info(name) }

func (p meshPackages) ToolsetWithConfig(name string, cfg toolpkg.Config) toolset.Toolset {
	return p.c.ToolsetWithConfig(name, cfg)
}

// flagsSet returns the names of the flags given on the command line.
func flagsSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// checkBrokerUse refuses broker flags without --broker.
func checkBrokerUse(fs *flag.FlagSet, bf *brokerFlags) error {
	set := flagsSet(fs)
	if bf.url == "" && (bf.credentialsGiven() || set["namespace"]) {
		return usagef("%v", errNoBroker)
	}
	return bf.check()
}

// callOnMesh calls one tool of a toolset the runtimes on the broker
// serve, as "toolset call" does a package's.
func callOnMesh(ctx context.Context, bf *brokerFlags, name, tool, args string, cfg configFlags, stdout, stderr io.Writer) error {
	if err := toolpkg.CheckName(name); err != nil {
		return usagef("%v", err)
	}
	mc, err := bf.client(ctx, warnLogger(stderr))
	if err != nil {
		return err
	}
	defer mc.close()
	info, err := mc.client.Info(name)
	if errors.Is(err, toolpkg.ErrNotFound) {
		return fmt.Errorf("no runtime on the broker serves the toolset %q", name)
	}
	if err != nil {
		return err
	}
	if info.Status != toolpkg.StatusReady {
		return fmt.Errorf("the toolset %q is %s on the runtimes: %v", name, info.Status, info.Errors)
	}
	config, err := configValues(info.Tools, cfg)
	if err != nil {
		return err
	}
	return callTool(ctx, mc.client.Toolset(name, config), name, tool, args, "on the runtimes", stdout)
}
