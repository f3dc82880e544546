package proc

// Memory is what processes hold, in bytes: their resident set (RSS: every
// page each one maps, shared ones counted in full) and their
// proportional set (PSS: each shared page divided among those that map
// it). Linux tells both (MemoryOf); elsewhere they are not known.
type Memory struct{ RSS, PSS int64 }

// Add is m and n together.
func (m Memory) Add(n Memory) Memory { return Memory{RSS: m.RSS + n.RSS, PSS: m.PSS + n.PSS} }
