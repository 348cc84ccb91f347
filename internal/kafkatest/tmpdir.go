package kafkatest

import (
	"os"
	"syscall"
)

// TmpDirEnv names the directory clusters keep their files under when set
// (e.g. /tmp, to measure brokers on disk); unset, tmpfs is used where the
// machine has one with room (clusterTempDir).
const TmpDirEnv = "KMIRROR_KAFKA_TMPDIR"

// tmpfsRoot is the tmpfs tried first, and tmpfsRoom what it must have free.
const (
	tmpfsRoot = "/dev/shm"
	tmpfsRoom = 4 << 30
)

// clusterRoot is where new clusters keep their files: $KMIRROR_KAFKA_TMPDIR,
// else /dev/shm when it is a tmpfs with 4 GiB free, else the system's
// temporary directory.
//
// Why tmpfs: a broker memory-maps each partition's offset and time index,
// preallocated sparse to 10 MiB, and its first write to one faults in the
// disk's readahead window around it. On a disk with a large readahead
// (8 MiB on the VMs this was measured on, /sys/block/*/queue/read_ahead_kb)
// that first write costs about 3 ms (2.7-3.5 s for 1,000 files, against
// 5-6 ms on tmpfs or for a 4 KiB file): a target that receives a thousand new
// partitions spent most of its time there (77 % of a JFR profile in
// OffsetIndex.append), measuring the machine instead of the copy. Data on
// tmpfs is gone when the machine stops, which test clusters never outlive.
func clusterRoot() string {
	if d := os.Getenv(TmpDirEnv); d != "" {
		return d
	}
	var st syscall.Statfs_t
	const tmpfsMagic = 0x01021994
	if err := syscall.Statfs(tmpfsRoot, &st); err == nil && st.Type == tmpfsMagic &&
		int64(st.Bavail)*st.Bsize >= tmpfsRoom {
		return tmpfsRoot
	}
	return os.TempDir()
}

// clusterTempDir makes a new directory under clusterRoot for a cluster's
// files (the system's temporary directory when tmpfs refuses it).
func clusterTempDir(pattern string) (string, error) {
	root := clusterRoot()
	dir, err := os.MkdirTemp(root, pattern)
	if err != nil && root == tmpfsRoot {
		return os.MkdirTemp("", pattern)
	}
	return dir, err
}
