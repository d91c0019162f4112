// Package ledger declares argument types for the core's schema tests: its
// Args has the same name as shop.Args.
package ledger

// Args is a note attached to a payment.
type Args struct {
	Note string `json:"note,omitempty"`
}
