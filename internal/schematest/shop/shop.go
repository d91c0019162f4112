// Package shop declares argument types for the core's schema tests.
package shop

import "github.com/gotoolset/toolset/internal/schematest/ledger"

// Args are the arguments of a payment: its amount is bounded, and it holds
// a field of another package's type of the same name.
type Args struct {
	Amount int         `json:"amount" jsonschema:"minimum=1,maximum=100"`
	Memo   ledger.Args `json:"memo"`
}
