package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// Operation is a background operation started by a request that answered 202.
type Operation struct {
	server *Server
	lxdapi.Operation
}

// operation sends a request that starts an operation and returns it.
func (s *Server) operation(method string, path string, body any) (*Operation, error) {
	resp, _, err := s.Query(method, path, body, "")
	if err != nil {
		return nil, err
	}

	if resp.Type != lxdapi.AsyncResponse {
		return nil, fmt.Errorf("%s %s: expected an operation, got a %s answer", method, path, resp.Type)
	}

	op := &Operation{server: s}
	err = json.Unmarshal(resp.Metadata, &op.Operation)
	if err != nil {
		return nil, fmt.Errorf("decode operation: %w", err)
	}

	return op, nil
}

// Wait blocks until the operation finishes or ctx ends, and returns the operation's error
// (LXD's own message when LXD refused the work).
func (op *Operation) Wait(ctx context.Context) error {
	for {
		// Long-poll in slices shorter than the connection's request timeout, so that a
		// long operation (a VM launch) is waited for as long as ctx allows.
		timeout := max(int(op.server.http.Timeout.Seconds())-10, 1)
		deadline, ok := ctx.Deadline()
		if ok {
			timeout = min(timeout, max(int(time.Until(deadline).Seconds()), 0))
		}

		var updated lxdapi.Operation
		_, err := op.server.queryStructContext(ctx, http.MethodGet, fmt.Sprintf("/1.0/operations/%s/wait?timeout=%d", op.ID, timeout), nil, "", &updated)
		if err != nil {
			return err
		}

		op.Operation = updated
		if updated.StatusCode.IsFinal() {
			if updated.Err != "" {
				return errors.New(updated.Err)
			}

			return nil
		}

		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// Cancel asks the server to cancel the operation.
func (op *Operation) Cancel() error {
	_, err := op.server.queryStruct(http.MethodDelete, "/1.0/operations/"+op.ID, nil, "", nil)
	return err
}

// GetOperation returns an operation by id.
func (s *Server) GetOperation(id string) (*Operation, error) {
	op := &Operation{server: s}
	_, err := s.queryStruct(http.MethodGet, "/1.0/operations/"+id, nil, "", &op.Operation)
	if err != nil {
		return nil, err
	}

	return op, nil
}

// GetOperations returns the operations the caller may see.
func (s *Server) GetOperations() ([]lxdapi.Operation, error) {
	byStatus := map[string][]lxdapi.Operation{}
	_, err := s.queryStruct(http.MethodGet, "/1.0/operations?recursion=1", nil, "", &byStatus)
	if err != nil {
		return nil, err
	}

	var ops []lxdapi.Operation
	for _, list := range byStatus {
		ops = append(ops, list...)
	}

	return ops, nil
}
