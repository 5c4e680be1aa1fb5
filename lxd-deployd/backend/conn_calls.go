package backend

import (
	"context"
	"io"
	"net/url"
	"strings"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"
)

// The calls below are LXD's client calls the engines make one by one, through a Conn:
// each is the client's own call, so what LXD is asked (and a test's fake answers) is
// unchanged; they are here so that only this package reaches LXD.

// ReadInstance reads one instance of a project with its ETag (LXD's 404 error when it has
// none; GetInstance answers found instead).
func ReadInstance(conn *Conn, project string, name string) (*lxdapi.Instance, string, error) {
	return conn.raw().UseProject(project).GetInstance(name)
}

// UpdateInstance replaces an instance's writable part if its ETag is still etag, and
// waits for LXD to finish.
func UpdateInstance(ctx context.Context, conn *Conn, project string, name string, put lxdapi.InstancePut, etag string) error {
	op, err := conn.raw().UseProject(project).UpdateInstance(name, put, etag)
	if err != nil {
		return err
	}

	return op.WaitContext(ctx)
}

// ListInstancesFull lists a project's instances with their state (memory usage), in one
// call.
func ListInstancesFull(conn *Conn, project string) ([]lxdapi.InstanceFull, error) {
	return conn.raw().UseProject(project).GetInstancesFull(lxdapi.InstanceTypeAny)
}

// ListOperations lists a project's LXD operations (LXD 5.0 cannot list all projects at
// once).
func ListOperations(conn *Conn, project string) ([]lxdapi.Operation, error) {
	return conn.raw().UseProject(project).GetOperations()
}

// ImageSource is how an instance is made from image: by alias when the project has one
// by that name, else by fingerprint.
func ImageSource(conn *Conn, project string, image string) lxdapi.InstanceSource {
	_, _, err := conn.raw().UseProject(project).GetImageAlias(image)
	if err != nil {
		return lxdapi.InstanceSource{Type: "image", Fingerprint: image}
	}

	return lxdapi.InstanceSource{Type: "image", Alias: image}
}

// CreateStopped creates an instance and waits for LXD to finish, not starting it and not
// removing it on failure (CreateInstance does both).
func CreateStopped(ctx context.Context, conn *Conn, project string, req lxdapi.InstancesPost) error {
	op, err := conn.raw().UseProject(project).CreateInstance(req)
	if err != nil {
		return err
	}

	return op.WaitContext(ctx)
}

// ChangeState asks LXD for a state change through its client (UpdateInstanceState goes
// through a raw request and checks the state reached) and waits for it to finish.
func ChangeState(ctx context.Context, conn *Conn, project string, name string, state lxdapi.InstanceStatePut) error {
	op, err := conn.raw().UseProject(project).UpdateInstanceState(name, state, "")
	if err != nil {
		return err
	}

	return op.WaitContext(ctx)
}

// DeleteOnly deletes an instance as it is and waits for LXD to finish (DeleteInstance
// lifts the protection and stops it first, and only for instances of a shape).
func DeleteOnly(ctx context.Context, conn *Conn, project string, name string) error {
	op, err := conn.raw().UseProject(project).DeleteInstance(name)
	if err != nil {
		return err
	}

	return op.WaitContext(ctx)
}

// MakeDirectory makes a directory in an instance (root's, mode 0755).
func MakeDirectory(conn *Conn, project string, instance string, dir string) error {
	return conn.raw().UseProject(project).CreateInstanceFile(instance, dir, lxd.InstanceFileArgs{Type: "directory", Mode: 0o755, UID: 0, GID: 0})
}

// WriteFile writes a file in an instance, root's with mode, replacing one there.
func WriteFile(conn *Conn, project string, instance string, file string, content string, mode int) error {
	return conn.raw().UseProject(project).CreateInstanceFile(instance, file, lxd.InstanceFileArgs{Content: strings.NewReader(content), Type: "file", Mode: mode, UID: 0, GID: 0, WriteMode: "overwrite"})
}

// StartExec starts a command in an instance without websockets (its output recorded in
// LXD's log files, if post says so) and returns the URL of LXD's operation, empty when LXD
// started none.
func StartExec(conn *Conn, project string, instance string, post lxdapi.InstanceExecPost) (string, error) {
	resp, _, err := conn.raw().RawQuery("POST", "/1.0/instances/"+url.PathEscape(instance)+"/exec?project="+url.QueryEscape(project), post, "")
	if err != nil {
		return "", err
	}

	return resp.Operation, nil
}

// WaitOperation waits up to timeout seconds for one of a project's LXD operations to end
// and returns it as it then is (LXD's 404 error when it is gone).
func WaitOperation(conn *Conn, project string, id string, timeout int) (*lxdapi.Operation, error) {
	op, _, err := conn.raw().UseProject(project).GetOperationWait(id, timeout)
	return op, err
}

// LogFiles lists an instance's log files.
func LogFiles(conn *Conn, project string, instance string) ([]string, error) {
	return conn.raw().UseProject(project).GetInstanceLogfiles(instance)
}

// LogFile opens one of an instance's log files; the caller closes it.
func LogFile(conn *Conn, project string, instance string, name string) (io.ReadCloser, error) {
	return conn.raw().UseProject(project).GetInstanceLogfile(instance, name)
}
