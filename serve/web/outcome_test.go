package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/web"
	"github.com/coder/acp-go-sdk"
)

// An approval answers the ask with the option the client named, else the
// first that allows (approved) or rejects, else cancelled.
func TestOutcomeOf(t *testing.T) {
	full := []string{"always:allow_always", "once:allow_once", "no:reject_once", "never:reject_always"}
	for _, tc := range []struct {
		name     string
		options  []string
		approved bool
		optionID string
		want     string
		bad      bool
	}{
		{"approved takes allow_once first", full, true, "", "selected once", false},
		{"denied takes reject_once first", full, false, "", "selected no", false},
		{"a named option", full, true, "always", "selected always", false},
		{"a named option that is not the ask's", full, true, "bogus", "", true},
		{"only allow_always", []string{"a:allow_always"}, true, "", "selected a", false},
		{"no option that rejects", []string{"a:allow_once"}, false, "", "cancelled", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := web.OutcomeOf(webtest.AskWith(tc.options...), tc.approved, tc.optionID)
			if tc.bad {
				if !errors.Is(err, web.ErrBadRequest) {
					t.Fatalf("err = %v, want a bad request", err)
				}
				return
			}
			if err != nil || webtest.OutcomeText(got) != tc.want {
				t.Errorf("got %q, %v; want %q", webtest.OutcomeText(got), err, tc.want)
			}
		})
	}
}

// Each error a web request can get has its HTTP status.
func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("x: %w", web.ErrBadRequest), http.StatusBadRequest},
		{fmt.Errorf("x: %w", web.ErrUnknownChat), http.StatusNotFound},
		{fmt.Errorf("x: %w", web.ErrNoAsk), http.StatusConflict},
		{web.ErrTurnRunning, http.StatusConflict},
		{&acp.RequestError{Code: -32600, Message: "Invalid request: session busy: a turn runs"}, http.StatusConflict},
		{&acp.RequestError{Code: -32602, Message: "Invalid params"}, http.StatusBadRequest},
		{web.ErrClosed, http.StatusServiceUnavailable},
		{context.Canceled, http.StatusServiceUnavailable},
		{errors.New("anything else"), http.StatusInternalServerError},
	} {
		if got := web.StatusOf(tc.err); got != tc.want {
			t.Errorf("statusOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
