package test

import (
	"bytes"
	"io"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"
)

func lxdInstanceFile(content []byte, mode int) lxd.InstanceFileArgs {
	return lxd.InstanceFileArgs{Content: bytes.NewReader(content), Mode: mode, Type: "file", WriteMode: "overwrite"}
}

func lxdExecArgs(stdout io.Writer, stderr io.Writer, done chan bool) *lxd.InstanceExecArgs {
	return &lxd.InstanceExecArgs{Stdout: stdout, Stderr: stderr, DataDone: done}
}

// shellIn runs script with sh -c in an instance, with env, and returns its exit code and
// stderr; err is LXD's, when the exec itself failed.
func shellIn(conn lxd.InstanceServer, instance string, script string, env map[string]string) (int, string, error) {
	var stdout, stderr bytes.Buffer
	wait := make(chan bool)
	op, err := conn.ExecInstance(instance, lxdapi.InstanceExecPost{Command: []string{"sh", "-c", script}, Environment: env, WaitForWS: true}, lxdExecArgs(&stdout, &stderr, wait))
	if err != nil {
		return 0, "", err
	}

	if err := op.Wait(); err != nil {
		return 0, "", err
	}

	<-wait
	code, _ := op.Get().Metadata["return"].(float64)
	return int(code), stderr.String(), nil
}
