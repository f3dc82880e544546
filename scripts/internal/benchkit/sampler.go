package benchkit

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Peaks is what a run's sampler found of the agent's process tree.
type Peaks struct {
	PeakTree int64 // the peak RSS of the whole tree, in KiB
	PeakPSS  int64 // the peak PSS of the whole tree, in KiB
	PeakOwn  int64 // the peak RSS of the agent process alone, in KiB
	// MaxMatching is the most processes of the matched executable (the
	// agent's CLI) alive at once.
	MaxMatching int
	Exes        []string // the distinct executables the tree ran, sorted
}

// sampler follows a process tree's resident memory every SampleEvery.
type sampler struct {
	root     int
	match    string // the executable whose processes it counts
	quit     chan struct{}
	finished chan struct{}
	t0       time.Time
	n        int // the samples taken, by the loop

	mu    sync.Mutex
	peaks Peaks
	seen  map[int]ProcID
	exes  map[string]bool
	life  map[int]*procLife
}

// procLife is what the sampler saw of one process.
type procLife struct {
	pid, ppid, pgid int
	cmdline         string
	first, last     time.Duration // since the agent started
	peak            int64         // KiB
}

// sums is one sample of a process tree.
type sums struct {
	rss, pss, own int64 // KiB
	matching      int
}

// startSampler starts sampling root's process tree, counting the
// processes that run match.
func startSampler(root int, match string) *sampler {
	s := &sampler{root: root, match: match, quit: make(chan struct{}), finished: make(chan struct{}),
		t0: time.Now(), seen: map[int]ProcID{}, exes: map[string]bool{}, life: map[int]*procLife{}}
	go s.loop()
	return s
}

// loop samples until stop.
func (s *sampler) loop() {
	defer close(s.finished)
	t := time.NewTicker(SampleEvery)
	defer t.Stop()
	for {
		s.sample(pssDue(s.n, PSSEvery))
		s.n++
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
	}
}

// pssDue says whether sample n (from 0) reads PSS when every is
// PSSEvery: the first and then every every-th; each one if every < 2.
func pssDue(n, every int) bool {
	return every < 2 || n%every == 0
}

// sample reads the tree once, and the PSS of its processes if pss.
func (s *sampler) sample(pss bool) {
	procs := tree(s.root)
	exes := make(map[int]string, len(procs))
	for pid := range procs {
		// Read exe every time: a child seen between fork and exec
		// still shows its parent's.
		exes[pid], _ = os.Readlink(procPath(pid, "exe"))
	}
	var sum sums
	now := time.Since(s.t0)
	for pid, st := range procs {
		// A child that runs its parent's executable is (in these
		// benchmarks) a fork or vfork not yet exec'd: its pages are its
		// parent's, so leave it out of the sums.
		forked := pid != s.root && exes[pid] != "" && exes[pid] == exes[st.ppid]
		rss := rssKiB(pid)
		if !forked {
			sum.rss += rss
			if pss {
				sum.pss += pssKiB(pid)
			}
			if exes[pid] == s.match && rss > 0 {
				sum.matching++
			}
		}
		if pid == s.root {
			sum.own = rss
		}
		s.record(pid, st, exes[pid], rss, now)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peaks.PeakTree = max(s.peaks.PeakTree, sum.rss)
	s.peaks.PeakPSS = max(s.peaks.PeakPSS, sum.pss)
	s.peaks.PeakOwn = max(s.peaks.PeakOwn, sum.own)
	s.peaks.MaxMatching = max(s.peaks.MaxMatching, sum.matching)
}

// record notes one process of a sample: seen at now, running exe, with
// rss KiB resident.
func (s *sampler) record(pid int, st procStat, exe string, rss int64, now time.Duration) {
	cmdline, _ := os.ReadFile(procPath(pid, "cmdline"))
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.seen[pid]; !ok || old.start != st.start {
		s.seen[pid] = ProcID{pid: pid, pgid: st.pgid, start: st.start}
		s.life[pid] = &procLife{pid: pid, ppid: st.ppid, pgid: st.pgid, first: now}
	}
	if exe != "" {
		s.exes[exe] = true
	}
	l := s.life[pid]
	l.last = now
	l.peak = max(l.peak, rss)
	if len(cmdline) > 0 {
		l.cmdline = strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
	}
}

// stop takes a last sample and stops the sampler.
func (s *sampler) stop() {
	select {
	case <-s.quit:
		return
	default:
	}
	close(s.quit)
	<-s.finished
	s.sample(true)
}

// seenProcs is every process seen in the tree.
func (s *sampler) seenProcs() []ProcID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProcID, 0, len(s.seen))
	for _, p := range s.seen {
		out = append(out, p)
	}
	return out
}

// result returns the peaks so far.
func (s *sampler) result() Peaks {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peaks
	for e := range s.exes {
		p.Exes = append(p.Exes, e)
	}
	slices.Sort(p.Exes)
	return p
}

// lives describes every process seen, one a line, in the order they
// appeared.
func (s *sampler) lives() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ls []*procLife
	for _, l := range s.life {
		ls = append(ls, l)
	}
	slices.SortFunc(ls, func(a, b *procLife) int { return int(a.first - b.first) })
	var b strings.Builder
	for _, l := range ls {
		fmt.Fprintf(&b, "    pid %d ppid %d pgid %d, seen %v–%v, peak %d KiB: %s\n", l.pid, l.ppid, l.pgid,
			l.first.Round(time.Millisecond), l.last.Round(time.Millisecond), l.peak, FirstLine(l.cmdline, 160))
	}
	return b.String()
}
