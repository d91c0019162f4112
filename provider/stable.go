package provider

import (
	"bytes"
	"sync"
)

// Stable keeps the tools a conversation sends a provider the same, so that
// the provider's prompt cache is kept, when a turn shows only some of the
// tools sent before (a filter hid one, a budget was spent): the earlier
// tools are sent again, and the turn's tools are named for the provider's
// own restriction by name (OpenAI's allowed_tools, Gemini's
// allowed_function_names). A turn that shows a tool not sent before, or
// one whose definition changed, sends its own tools and is remembered in
// their place.
//
// The tools sent again are definitions the model can read, not tools it
// can call: the turn's list refuses a call of a tool it does not hold.
// Tools hidden because this user may not know of them must not be sent
// again; leave Stable out of such a conversation.
//
// A Stable serves one conversation, turn after turn; it is safe for
// concurrent use, and the zero value is ready to use.
type Stable[T any] struct {
	mu   sync.Mutex
	sent []T
	keys map[string][]byte // name -> encoded definition, of sent
}

// Next returns the tools to send for a turn whose tools, in the
// provider's form, are tools, each named by name and encoded by key (equal
// bytes exactly when definitions are equal); and, when send holds tools
// the turn does not show, the turn's tools, to which the model is to be
// restricted (empty, not nil, when the turn shows none). restrict is nil
// when the turn shows every tool sent. send may be the slice an earlier
// turn was given: it is not to be written to.
func (s *Stable[T]) Next(tools []T, name func(T) string, key func(T) ([]byte, error)) (send, restrict []T, err error) {
	keys := make(map[string][]byte, len(tools))
	for _, t := range tools {
		k, err := key(t)
		if err != nil {
			return nil, nil, err
		}
		keys[name(t)] = k
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent != nil && subset(keys, s.keys) {
		if len(keys) == len(s.keys) {
			return s.sent, nil, nil
		}
		if tools == nil {
			tools = []T{}
		}
		return s.sent, tools, nil
	}
	if len(tools) == 0 {
		// Nothing to keep: a request with no tools leaves them out.
		s.sent, s.keys = nil, nil
		return nil, nil, nil
	}
	s.sent, s.keys = tools, keys
	return tools, nil, nil
}

// subset reports whether every definition of turn is one of sent.
func subset(turn, sent map[string][]byte) bool {
	for n, k := range turn {
		if sk, ok := sent[n]; !ok || !bytes.Equal(k, sk) {
			return false
		}
	}
	return true
}
