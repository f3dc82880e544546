package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for acpbridge itself, as
// docs_test.go runs it for its help.
func TestMain(m *testing.M) {
	if os.Getenv("ACPBRIDGE_TEST_AS_BRIDGE") == "1" {
		main()
	}
	os.Exit(m.Run())
}
