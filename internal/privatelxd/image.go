package privatelxd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	lxd "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
)

// initScript is the image's /sbin/init. It idles until LXD stops the
// container: `stop` sends SIGPWR to init (LXC's default halt signal), and
// PID 1 of a PID namespace ignores signals it has no handler for, so the
// trap is what makes a clean stop return promptly instead of timing out.
// LXC already mounts /proc, /sys and /dev for us.
const initScript = `#!/bin/sh
trap 'exit 0' PWR TERM INT HUP
while :; do
	sleep 3600 &
	wait $!
done
`

var busyboxImage struct {
	once sync.Once
	data []byte // gzip'd unified image tarball
	err  error
}

// imageTarball returns the busybox image as a unified tarball
// (metadata.yaml + rootfs/), built once per process.
func imageTarball() ([]byte, error) {
	busyboxImage.once.Do(func() {
		busyboxImage.data, busyboxImage.err = buildImage()
	})
	return busyboxImage.data, busyboxImage.err
}

// importImage uploads the busybox image and gives it the [Image] alias.
func importImage(c lxd.InstanceServer) error {
	data, err := imageTarball()
	if err != nil {
		return fmt.Errorf("build busybox image: %w", err)
	}
	op, err := c.CreateImage(api.ImagesPost{Filename: "busybox.tar.gz"}, &lxd.ImageCreateArgs{
		MetaFile: bytes.NewReader(data),
		MetaName: "busybox.tar.gz",
	})
	if err == nil {
		err = op.Wait()
	}
	if err != nil {
		return fmt.Errorf("import image: %w", err)
	}
	fingerprint, _ := op.Get().Metadata["fingerprint"].(string)
	if fingerprint == "" {
		return fmt.Errorf("import image: no fingerprint in %v", op.Get().Metadata)
	}
	err = c.CreateImageAlias(api.ImageAliasesPost{ImageAliasesEntry: api.ImageAliasesEntry{
		Name:   Image,
		Type:   "container",
		Target: fingerprint,
	}})
	if err != nil {
		return fmt.Errorf("create image alias: %w", err)
	}
	return nil
}

func buildImage() ([]byte, error) {
	busybox, err := findBusybox()
	if err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list-full: %w", err)
	}
	arch, ok := map[string]string{
		"amd64":   "x86_64",
		"arm64":   "aarch64",
		"386":     "i686",
		"ppc64le": "ppc64le",
		"s390x":   "s390x",
		"riscv64": "riscv64",
	}[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("no LXD architecture name for GOARCH %s", runtime.GOARCH)
	}
	now := time.Now()
	metadata := fmt.Sprintf(`architecture: %s
creation_date: %d
properties:
  architecture: %s
  description: busybox-static test image (lxdtest)
  os: busybox
  release: static
`, arch, now.Unix(), arch)

	type file struct {
		mode int64
		data string // file contents, or symlink target if link
		link bool
	}
	files := map[string]file{
		"metadata.yaml":         {mode: 0o644, data: metadata},
		"rootfs/bin/busybox":    {mode: 0o755, data: string(bin)},
		"rootfs/sbin/init":      {mode: 0o755, data: initScript},
		"rootfs/etc/passwd":     {mode: 0o644, data: "root:x:0:0:root:/root:/bin/sh\n"},
		"rootfs/etc/group":      {mode: 0o644, data: "root:x:0:\n"},
		"rootfs/etc/hostname":   {mode: 0o644, data: "busybox\n"},
		"rootfs/etc/os-release": {mode: 0o644, data: "NAME=busybox\nID=busybox\n"},
	}
	for _, applet := range strings.Fields(string(out)) {
		name := "rootfs/" + strings.TrimPrefix(applet, "/")
		if _, taken := files[name]; !taken {
			files[name] = file{mode: 0o777, data: "/bin/busybox", link: true}
		}
	}
	dirs := map[string]int64{
		"rootfs": 0o755, "rootfs/proc": 0o555, "rootfs/sys": 0o555, "rootfs/dev": 0o755,
		"rootfs/tmp": 0o1777, "rootfs/root": 0o700, "rootfs/run": 0o755, "rootfs/mnt": 0o755,
		"rootfs/var": 0o755, "rootfs/var/log": 0o755,
	}
	for name := range files {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, ok := dirs[d]; !ok {
				dirs[d] = 0o755
			}
		}
	}

	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	write := func(hdr *tar.Header, data string) error {
		hdr.ModTime, hdr.Format = now, tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write([]byte(data))
		return err
	}
	// Sorted paths put every directory before its contents.
	names := make([]string, 0, len(dirs)+len(files))
	for d := range dirs {
		names = append(names, d)
	}
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, name := range names {
		var err error
		if mode, ok := dirs[name]; ok {
			err = write(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode}, "")
		} else if f := files[name]; f.link {
			err = write(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: f.data, Mode: f.mode}, "")
		} else {
			err = write(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: f.mode, Size: int64(len(f.data))}, f.data)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
