package acpv2

import (
	"encoding/json"
	"testing"
)

// TestSessionUpdate_stateRoundTrips is generate-v2.patch's const fix: an
// idle state_update re-encodes as idle, not as the first state's const.
func TestSessionUpdate_stateRoundTrips(t *testing.T) {
	for _, in := range []string{
		`{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}`,
		`{"sessionUpdate":"state_update","state":"requires_action"}`,
		`{"sessionUpdate":"state_update","state":"running"}`,
	} {
		var u SessionUpdate
		if err := json.Unmarshal([]byte(in), &u); err != nil {
			t.Fatalf("decode %s: %v", in, err)
		}
		out, err := json.Marshal(u)
		if err != nil {
			t.Fatalf("encode %s: %v", in, err)
		}
		if string(out) != in {
			t.Errorf("round trip: got %s, want %s", out, in)
		}
	}
}
