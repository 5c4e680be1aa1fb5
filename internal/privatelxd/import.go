package privatelxd

import lxd "github.com/canonical/lxd/client"

// ImportImage uploads the busybox image into c under the [Image] alias. A private LXD gets
// it at launch; an LXD cluster the tests form themselves (test/lxdtest's cluster) imports it
// once through its first member.
func ImportImage(c lxd.InstanceServer) error {
	return importImage(c)
}
