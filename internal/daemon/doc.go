// Package daemon keeps servers that outlive the bridge that started them
// and are shared by all the user's bridges (--shared, on by default): an
// agent's server
// (codex app-server, opencode serve), and the spares server, acpbridge
// itself, which keeps agent processes started ahead of need.
//
// # Daemons
//
// A daemon is shared by every bridge of the user that runs it the same
// way, as gopls' -remote=auto daemon is. A bridge that finds one running
// only connects to it, which saves the server's start-up (about 120 ms for
// codex app-server, seconds for opencode serve) on every bridge but the
// first.
//
// A daemon lives in a directory of its own under Root, named by its Spec's
// Name and a hash of its Key and of this acpbridge's Build (its executable
// and what Go recorded of it): an acpbridge upgraded or rebuilt never
// talks to a keeper of another build, whose daemon idles out once that
// build's bridges have gone. The Key holds whatever else changes what the
// server does (the agent's executable and the contents of its settings
// files: see agentkit's DaemonSpec).
//
//	spec.json  what the keeper runs, and the Build that started it
//	lease      every bridge using the daemon holds a shared lock on it
//	start      the lock a bridge holds while it starts the daemon
//	keeping    the lock the keeper holds while it lives
//	keeper     the keeper's pid
//	pid        the server's pid, written by the keeper
//	idle       since when no bridge has held a lease, while none does, and
//	           the CPU time the keeper and its server had used by then
//	will       the keeper's socket for bridges' wills (see below)
//	log        the keeper's and the server's output
//
// and whatever the server makes there itself (a socket). Unix socket paths
// are short (108 bytes), so Root is kept short. The directory and the one
// above it must be the user's own, closed to others: they hold the
// server's socket and its password.
//
// Attend takes a lease and, if the ready probe finds no server, starts the
// daemon, holding the start lock so that two bridges don't both start it,
// and waiting for a keeper that runs already rather than doubling it. A
// keeper that has run for 30 s and whose server has not answered a bridge
// for 5 s is hung (stopped, deadlocked): the bridge kills it, and its
// server's group, and starts another. The keeper is acpbridge run as
//
//	acpbridge __daemon keep DIR
//
// by `acpbridge __daemon DIR`, which starts it in a session of its own
// and exits at once: so the keeper is nobody's child but init's, and goes
// with no bridge's process tree. The program that launches keepers is set
// by KeepWith (acpbridge's main: itself).
//
// The keeper runs the server in a process group of its own, killed with
// the keeper (proc.ChildAttr), and stops it (SIGTERM to its group, then
// SIGKILL proc.Grace later) and exits when it is told to (SIGTERM, SIGINT,
// SIGHUP; StopAll), or once no bridge has held a lease for the Spec's
// Idle; it exits too when the server does. It removes what the server
// left in the directory before it starts one and after it has stopped.
//
// A bridge that starts a daemon keeps at most the Spec's Max (Max:
// $ACPBRIDGE_MAX_DAEMONS, else DefaultMax) running under Root: beside
// the start, it stops those idle the longest, holding each one's lease
// lock while it stops so that no bridge takes a lease meanwhile; one a
// bridge holds a lease on is never stopped, so more may run while all
// are in use.
//
// What the code relies on, of flock(2):
//
//   - A lease is a shared lock, held by an open file: a bridge that dies in
//     any way lets its lease go with it.
//   - Locks on two opens of one file conflict even within one process, so
//     the keeper sees whether any lease is held by trying the lease lock
//     exclusively on a file of its own (every pollFor(Idle): 5 s for the
//     default 10 minutes). A bridge touches the lease file as it takes and
//     lets go its lease, so that one that came and went between two looks
//     still starts the idle time again. It tries it on
//     a file it keeps open from its start: a daemon whose directory was
//     removed (a temporary directory cleaned) still idles out, since those
//     using it hold their leases on the same file.
//   - Once idle, the keeper keeps the exclusive lock while it stops the
//     server: a bridge that comes then waits for its lease, finds no
//     server, and starts a new one.
//
// A turn a bridge runs on a shared server ends with the bridge, even one
// killed with SIGKILL, as it would with a server of the bridge's own. The
// server can't tell (codex app-server runs a thread's turn on after the
// connection that started it has gone; opencode serve has no connection
// per client), but the keeper can: a bridge leaves it a will
// (Lease.Will: a Deed, such as an HTTP request or JSON-RPC messages on the
// server's socket, that interrupts the turn) on a connection to the
// socket "will" in the daemon's directory, and takes it back when the
// turn is over (Lease.Unwill). When that connection ends (the lease let
// go, or the bridge dead: the kernel closes a killed process's
// descriptors) the keeper does what is left of the will, each deed within
// 10 s. A keeper killed takes its server with it, and the bridge's turn
// fails with the connection's end.
//
// List finds the daemons that run under a root, with what they hold (RSS
// and PSS of the keeper and everything under it, from
// /proc/PID/smaps_rollup), the CPU time they have used (/proc/PID/stat),
// the bridges that hold a lease (/proc/locks) and since when none has
// (and so what they use idle: Running.IdleShare); Running.Stop and
// StopAll stop them (SIGTERM to the keeper, then SIGKILL to a keeper that
// hangs). acpbridge doctor and
// acpbridge daemons [stop] are made of them.
//
// On systems other than Unix there are no daemons: Attend fails and the
// bridge runs its servers itself.
//
// # Spares
//
// The spares server keeps agent processes started ahead of need, for any
// of the user's bridges to take, so that a first turn does not wait for an
// agent's start-up (most of a second for Claude Code) even when the bridge
// itself has only just started. It is a daemon (SparesOf) whose server is
// acpbridge run as
//
//	acpbridge __spares SOCK TTL
//
// It listens on the Unix socket SOCK in the daemon's directory. A bridge
// connects and sends one request, a JSON line:
//
//	{"op":"warm","path":…,"args":[…],"dir":…,"env":[…],"tag":…}  have one started so
//	{"op":"take",…}                                              hand it over
//
// A take is answered with {"pid":N} and the process's stdin, stdout and
// stderr themselves (SCM_RIGHTS), so the bridge talks to the process
// directly from then on (proc.Adopt); the connection stays open until the
// process exits, when the server writes {"exit":"STATUS"} ("" for status
// 0) and closes it. A take with no spare to give is answered
// {"none":true}. Either way the server starts another for the next take,
// a second later (refillDelay: not beside the agent the bridge is starting
// its first turn on), one per kind (proc.Spec.Kind: path, arguments,
// directory, and the tag, a digest of the settings files the agent reads
// at its start): what it was asked for once is likely asked for again. A
// spare of a kind's place whose tag is not the one asked for (its settings
// changed since it started) is never lent, and goes when the new kind is
// warmed. It keeps at most maxSpares kinds, the oldest going first.
//
// The descriptors are passed as they are: the server's ends of the pipes
// are non-blocking (os.Pipe), and so are the bridge's, which share their
// open file descriptions; the server never calls File.Fd on them, which
// would make them blocking for both. A spare nobody took within TTL is
// stopped, and so are all at the server's end. The processes stay the
// server's children: if the server exits or is killed, those it lent go
// too (their parent-death signal, on Linux), as untaken ones do; the
// keeper stops it only once no bridge holds a lease.
//
// A lent process and everything under it end with the bridge that took
// it. The server runs every spare under acpbridge's supervisor (Linux;
// see package proc), as a bridge runs its own agents, and the take's
// connection is the lease on the process: when the bridge's end of it
// closes before the process has exited (the bridge died, even by SIGKILL,
// which closes its descriptors all the same), the server stops the
// process (SIGTERM to its group, then the rest of proc's ladder), and the
// supervisor kills what the agent left, even in a session of its own
// (claude's Bash tool starts its commands so). The process's stdin, which
// ends too, is not enough: claude does not exit at its end while a turn
// runs.
package daemon
