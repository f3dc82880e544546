// Package registry holds acpbridge's entry for the ACP Registry
// (https://github.com/agentclientprotocol/registry): agent.json.in, the
// manifest scripts/release.sh fills in with a release's version and
// archive URLs, and icon.svg. Its tests check both against the registry's
// own rules: the manifest against the registry's JSON schema (vendored in
// testdata from agentclientprotocol/registry at 3de1678) and the checks
// its build script runs (versions in the URLs, a 16x16 monochrome icon),
// and a release built for this machine end to end, with the windows/amd64
// zip (acpbridge.exe, checked as a Windows executable, not run).
package registry
