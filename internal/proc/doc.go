// Package proc runs agent CLIs as child processes, supervises them on
// Linux, and reads the process tree.
//
// # Child processes
//
// Start runs a Spec as a Process:
//
//   - in a process group of its own, so that a signal to the group reaches
//     everything the agent started in it; on Linux the kernel also sends it
//     SIGKILL when the thread that started it exits (Pdeathsig), which in
//     this program means the bridge died: it never locks a goroutine to its
//     thread, so the Go runtime keeps its threads alive;
//   - with stdin and stdout on pipes the Process owns (not os/exec's, which
//     Wait closes at the exit and with it the last lines the child wrote):
//     Stdout stays readable for DrainGrace after the exit, then reads time
//     out, and the pipe closes after twice that, in case a grandchild holds
//     it open;
//   - with stderr kept as a bounded Tail (16 KiB, terminal colour codes
//     taken out) for error messages, and never written to the bridge's own
//     stdout, which is the ACP stream;
//   - stopped by a ladder Grace apart: stdin closed, SIGTERM to the group,
//     SIGKILL to the group; then what is left of the group gets SIGTERM.
//
// Windows has no process groups or SIGTERM: each child is put in a Job
// Object of its own that is killed when its handle closes
// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE), which the bridge does at the
// child's exit and the system at the bridge's; the ladder's SIGKILL
// terminates the job, and its SIGTERMs are skipped.
//
// A Process can also be handed to another program whole (Spec.Lend keeps
// its stderr on a pipe; Process.Lend gives up the three pipes) and made
// again there from the descriptors received (Adopt): package daemon's
// spares server lends processes this way.
//
// # Supervision (Linux)
//
// Group signals and Pdeathsig miss what an agent's tools start in a group
// or session of its own (claude's Bash tool does), which used to outlive a
// bridge killed with SIGKILL. After SuperviseWith, Start runs every agent
// under acpbridge's supervisor (SuperviseCommand, the function Supervise),
// a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the agent leaves
// behind becomes the supervisor's child. The supervisor hears of the
// bridge's death as SIGTERM (its Pdeathsig) and of Stop's SIGTERM to its
// group alike: it stops the agent (SIGTERM, then SIGKILL after Grace), and
// once the agent has exited it kills every process left under it, with
// their groups, and exits with the agent's status (128+N for signal N).
// Other signals to its group (amp's cancel is a SIGINT) reach the agent
// itself and are not the supervisor's business. Elsewhere supervision is
// not available, and a tool process that left the agent's group can
// outlive a SIGKILLed bridge.
//
// # The process tree (Linux)
//
// Descendants, Cwd and KillTree read /proc: a process's parent is the
// fourth field of /proc/PID/stat, counted after the last ')' because the
// command name in parentheses may hold spaces and parentheses; zombies are
// left out. Elsewhere the tree is not known and they report nothing.
package proc
