//go:build !linux

package proc

// Descendants is not known here.
func (p *Process) Descendants() []int { return nil }

// Descendants is not known here.
func Descendants(int) []int { return nil }

// Cwd is not known here.
func Cwd(int) string { return "" }

// KillTree does nothing here.
func KillTree(int) {}

// MemoryOf is not known here.
func MemoryOf(int) (Memory, bool) { return Memory{}, false }

// TreeMemory is not known here.
func TreeMemory(int) Memory { return Memory{} }
