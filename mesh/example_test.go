package mesh_test

import (
	"fmt"

	"github.com/gotoolset/toolset/mesh"
)

// The subjects of SAM's remote-tool protocol on NATS, and a name that no
// subject can hold, refused rather than mangled.
func ExampleNewSubjects() {
	subj, err := mesh.NewSubjects("acme")
	if err != nil {
		panic(err)
	}
	invoke, _ := subj.Invoke("weather__forecast")
	pinned, _ := subj.InvokeVersion("weather__forecast", 3)
	resp, _ := subj.Response("support-agent", "c42")
	fmt.Println(invoke)
	fmt.Println(pinned)
	fmt.Println(resp)
	_, err = subj.Invoke("weather.forecast")
	fmt.Println(err != nil)
	// Output:
	// acme.a2a.v1.sam_remote_tool.invoke.weather__forecast
	// acme.a2a.v1.sam_remote_tool.invoke.weather__forecast.v3
	// acme.a2a.v1.sam_remote_tool.response.support-agent.c42
	// true
}

// What an agent's user may do on the broker: its grant, for a
// nats-server's permissions (see ROLES.md).
func ExamplePermissions() {
	g, err := mesh.Permissions(mesh.RoleAgent, "acme", "support-agent")
	if err != nil {
		panic(err)
	}
	fmt.Println(g.InboxPrefix)
	for _, s := range g.Subscribe {
		if s == "acme.a2a.v1.sam_remote_tool.response.support-agent.>" {
			fmt.Println("reads its own responses")
		}
	}
	// Output:
	// _INBOX.acme.agent.support-agent
	// reads its own responses
}
