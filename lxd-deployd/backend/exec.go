package backend

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"syscall"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/websocket"
)

// ExecResult is what one command run inside an instance gave.
type ExecResult struct {
	ExitCode int

	// Output is stdout then stderr, at most the limit Exec was given.
	Output string
}

// Exec runs a command inside an instance through LXD exec (no shell, no terminal) and
// returns its exit code and the start of its output. When ctx ends first the process is
// killed (LXD cannot cancel an exec operation, but forwards signals) and the error says so.
func Exec(ctx context.Context, c lxd.InstanceServer, project string, name string, command []string, limit int) (*ExecResult, error) {
	out := &limitedBuffer{limit: limit}
	done := make(chan bool)
	control := make(chan *websocket.Conn, 1)
	op, err := c.UseProject(project).ExecInstance(name, lxdapi.InstanceExecPost{Command: command, WaitForWS: true}, &lxd.InstanceExecArgs{
		Stdin:    bytes.NewReader(nil),
		Stdout:   out,
		Stderr:   out,
		DataDone: done,
		Control:  func(conn *websocket.Conn) { control <- conn },
	})
	if err != nil {
		return nil, err
	}

	waited := make(chan error, 1)
	go func() {
		err := op.Wait()
		if err == nil {
			<-done // all output copied
		}

		waited <- err
	}()

	select {
	case <-ctx.Done():
		select {
		case conn := <-control:
			_ = conn.WriteJSON(lxdapi.InstanceExecControl{Command: "signal", Signal: int(syscall.SIGKILL)})
		default:
		}

		return nil, fmt.Errorf("no answer within the check's timeout (the command was killed): %w", ctx.Err())
	case err = <-waited:
	}

	if err != nil {
		return nil, err
	}

	code, _ := op.Get().Metadata["return"].(float64)
	return &ExecResult{ExitCode: int(code), Output: out.String()}, nil
}

// limitedBuffer keeps the first limit bytes written to it and drops the rest, so that a
// chatty check cannot fill the database.
type limitedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.limit - b.buf.Len()
	if room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}

	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
