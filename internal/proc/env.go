package proc

import (
	"os"
	"slices"
	"strings"
)

// Secrets are the variables of acpbridge's environment that no child it
// starts gets: ACPBRIDGE_TOKEN is acpbridge serve's bearer token, which
// an agent's tool call that shows the environment (env) would otherwise
// put in a transcript.
var Secrets = []string{"ACPBRIDGE_TOKEN"}

// Environ is this process's environment without Secrets.
func Environ() []string { return Scrub(os.Environ()) }

// Scrub returns env without Secrets (their names compared as Windows
// does, case aside); nil stays nil.
func Scrub(env []string) []string {
	if env == nil {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.ContainsFunc(Secrets, func(s string) bool { return strings.EqualFold(s, name) })
	})
}
