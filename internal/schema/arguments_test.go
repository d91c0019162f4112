package schema

import "testing"

func TestMagnitude(t *testing.T) {
	for tok, want := range map[string]int{
		"1": 1, "9": 1, "10": 2, "0.1": 0, "0.01": -1, "-0.001": -2, "1e3": 4, "1.5e-3": -2,
		"123.45": 3, "0.000123e10": 7, "1E+2": 3, "1e999999": 1000000, "100e-2": 1,
	} {
		got, nz := Magnitude(tok)
		if !nz || got != want {
			t.Errorf("Magnitude(%s) = %d, %v; want %d", tok, got, nz, want)
		}
	}
	for _, tok := range []string{"0", "-0", "0.000", "0e999999", "-0.0E-5"} {
		if _, nz := Magnitude(tok); nz {
			t.Errorf("Magnitude(%s): nonzero", tok)
		}
	}
	if e, _ := Magnitude("1e99999999999999999999999"); e < 1<<29 {
		t.Errorf("a huge exponent saturates high, got %d", e)
	}
	if e, _ := Magnitude("1e-99999999999999999999999"); e > -(1 << 29) {
		t.Errorf("a huge negative exponent saturates low, got %d", e)
	}
}
