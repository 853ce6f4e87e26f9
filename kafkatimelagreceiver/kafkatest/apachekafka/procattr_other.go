//go:build !linux

package apachekafka

import "syscall"

func ownedProcess() *syscall.SysProcAttr { return nil }
