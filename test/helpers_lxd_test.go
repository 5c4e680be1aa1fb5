package test

import (
	"bytes"
	"io"

	lxd "github.com/canonical/lxd/client"
)

func lxdInstanceFile(content []byte, mode int) lxd.InstanceFileArgs {
	return lxd.InstanceFileArgs{Content: bytes.NewReader(content), Mode: mode, Type: "file", WriteMode: "overwrite"}
}

func lxdExecArgs(stdout io.Writer, stderr io.Writer, done chan bool) *lxd.InstanceExecArgs {
	return &lxd.InstanceExecArgs{Stdout: stdout, Stderr: stderr, DataDone: done}
}
