package proc

import (
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows has no process groups and no SIGTERM. Its counterpart of the
// group (and of the Linux supervisor) is a Job Object: Start puts each
// child in a job of its own, which everything the child starts joins, and
// which is killed whole when its last handle closes
// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE). The bridge holds that handle, so
// the job ends with the child's exit (what it left behind, as the Linux
// supervisor does), with SIGKILL to its "group", and with the bridge
// itself, however it ends. The child is put in the job just after it
// starts: a process it starts in that first instant escapes.

// jobs are the running children's jobs, by pid.
var jobs = struct {
	sync.Mutex
	m map[int]windows.Handle
}{m: map[int]windows.Handle{}}

// ChildAttr is how a child is started: as usual (see contain).
func ChildAttr() *syscall.SysProcAttr { return nil }

// contain puts the child pid in a job of its own that is killed when the
// bridge closes it; if that fails, the child is killed alone.
func contain(pid int) {
	job, err := windows.CreateJobObject(nil, nil) // not inherited
	if err != nil {
		return
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	_, err = windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	if err == nil {
		err = assign(job, pid)
	}
	if err != nil {
		windows.CloseHandle(job)
		return
	}
	jobs.Lock()
	jobs.m[pid] = job
	jobs.Unlock()
}

func assign(job windows.Handle, pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.AssignProcessToJobObject(job, h)
}

// release closes the job of the child pid, which has exited: what it left
// running is killed.
func release(pid int) {
	jobs.Lock()
	defer jobs.Unlock()
	if job, ok := jobs.m[pid]; ok {
		windows.CloseHandle(job)
		delete(jobs.m, pid)
	}
}

// SignalGroup kills the child pid's job (or the child alone, if it has
// none) for SIGKILL; Windows has no SIGTERM or SIGINT to send, so the
// shutdown ladder goes on to the kill.
func SignalGroup(pid int, sig syscall.Signal) error {
	if sig != syscall.SIGKILL {
		return nil
	}
	jobs.Lock()
	defer jobs.Unlock()
	if job, ok := jobs.m[pid]; ok {
		return windows.TerminateJobObject(job, 1)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return p.Kill()
}
