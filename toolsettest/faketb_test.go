package toolsettest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// fakeTB captures what a helper reports, to test failure messages. Only
// the methods the helpers use are implemented; the embedded interface is
// nil.
type fakeTB struct {
	testing.TB
	name string

	mu     sync.Mutex
	errors []string
	logs   []string
	fatal  bool
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.mu.Lock()
	f.fatal = true
	f.mu.Unlock()
	runtime.Goexit()
}

// run calls fn with a fake TB named name in its own goroutine, so that
// Fatalf can stop it, and returns the fake.
func run(name string, fn func(tb *fakeTB)) *fakeTB {
	tb := &fakeTB{name: name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb
}

func (f *fakeTB) output() string { return strings.Join(f.errors, "\n") }
