package apachekafka

import "syscall"

// ownedProcess makes the kernel kill a JVM whose test process dies without
// its cleanups (a panic, a kill -9), so no broker outlives its owner.
func ownedProcess() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
