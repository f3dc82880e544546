// Package acp provides Go types and connection plumbing for the
// Agent Client Protocol (ACP). It contains generated dispatchers,
// outbound helpers, shared request/response types, and related
// utilities used by agents and clients to communicate over ACP.
package acp
