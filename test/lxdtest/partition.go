package lxdtest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Partition is a small network the test can cut members off: a namespace holding a
// bridge (the switch), and one namespace per member joined to it by a veth pair, with an
// address of 10.99.0.0/24 on the member's side. Processes run in a member's namespace
// (nsenter --net=NetNS(name)) reach each other through the bridge, and nothing they send
// leaves the machine. No iptables: Cut sets the switch's end of a member's veth down, so
// whatever either side sends is dropped (the member's own end stays up, its routes stay:
// connections hang and time out as across a real partition, rather than fail at once).
type Partition struct {
	prefix  string
	members []string
}

// StartPartition creates the namespaces for members (names of at most 8 characters); they
// are deleted when the test ends, with every veth in them.
func StartPartition(t testing.TB, members ...string) *Partition {
	t.Helper()
	skipUnlessAvailable(t)
	p := &Partition{prefix: fmt.Sprintf("ldp%d", os.Getpid()), members: members}
	t.Cleanup(func() { p.delete() })
	p.delete() // a test of the same binary that died before its cleanup

	sw := p.prefix + "-sw"
	p.ip(t, "netns", "add", sw)
	p.ip(t, "-n", sw, "link", "set", "lo", "up")
	p.ip(t, "-n", sw, "link", "add", "br0", "type", "bridge")
	p.ip(t, "-n", sw, "link", "set", "br0", "up")
	for i, name := range members {
		ns := p.prefix + "-" + name
		p.ip(t, "netns", "add", ns)
		p.ip(t, "-n", ns, "link", "set", "lo", "up")
		p.ip(t, "-n", sw, "link", "add", p.port(name), "type", "veth", "peer", "name", "eth0", "netns", ns)
		p.ip(t, "-n", sw, "link", "set", p.port(name), "master", "br0", "up")
		p.ip(t, "-n", ns, "addr", "add", fmt.Sprintf("10.99.0.%d/24", i+1), "dev", "eth0")
		p.ip(t, "-n", ns, "link", "set", "eth0", "up")
	}

	return p
}

// NetNS is the path of a member's namespace, for nsenter --net.
func (p *Partition) NetNS(name string) string {
	return "/run/netns/" + p.prefix + "-" + name
}

// Address is a member's address in its namespace.
func (p *Partition) Address(name string) string {
	for i, member := range p.members {
		if member == name {
			return fmt.Sprintf("10.99.0.%d", i+1)
		}
	}

	panic("lxdtest: no member " + name + " in the partition")
}

// Cut drops everything a member sends or is sent, until Heal.
func (p *Partition) Cut(t testing.TB, name string) {
	t.Helper()
	p.ip(t, "-n", p.prefix+"-sw", "link", "set", p.port(name), "down")
}

// Heal reconnects a member Cut off.
func (p *Partition) Heal(t testing.TB, name string) {
	t.Helper()
	p.ip(t, "-n", p.prefix+"-sw", "link", "set", p.port(name), "up")
}

// port is the switch's end of a member's veth.
func (p *Partition) port(name string) string {
	return "p-" + name
}

func (p *Partition) ip(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// delete removes the namespaces (deleting one deletes the veths in it).
func (p *Partition) delete() {
	_ = exec.Command("ip", "netns", "del", p.prefix+"-sw").Run()
	for _, name := range p.members {
		_ = exec.Command("ip", "netns", "del", p.prefix+"-"+name).Run()
	}
}
