package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecimal(t *testing.T) {
	parse := func(s string) *decimal {
		var x decimal
		require.True(t, x.parse([]byte(s)), s)
		return &x
	}
	equal := [][]string{
		{"0", "-0", "0.0", "0e10", "-0.000e-5"},
		{"1", "1.0", "1e0", "10e-1", "0.1e1", "100e-2", "1.000000"},
		{"-120", "-1.2e2", "-12E1", "-120.00", "-0.12e+3"},
		{"0.05", "5e-2", "50e-3", "0.050"},
	}
	for _, group := range equal {
		for _, a := range group {
			for _, b := range group {
				assert.Zero(t, parse(a).cmp(parse(b)), "%s == %s", a, b)
			}
		}
	}
	ordered := []string{"-1e5", "-100", "-99.5", "-1", "-0.5", "-1e-9", "0", "1e-9", "0.5", "0.55", "1", "1.000000001", "9", "10", "99.99", "1e5"}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			assert.Equal(t, want, parse(ordered[i]).cmp(parse(ordered[j])), "%s vs %s", ordered[i], ordered[j])
		}
	}
	var x decimal
	assert.False(t, x.parse([]byte("1"+strings.Repeat("1", maxDigits))))
	assert.True(t, x.parse([]byte("1"+strings.Repeat("0", 100))))
	assert.False(t, x.parse([]byte("1e100001")))
	assert.True(t, x.parse([]byte("1e0000000000000000000000000009")))
	assert.Equal(t, 10, x.exp)
}

func TestDecimalCount(t *testing.T) {
	for s, want := range map[string]int{"0": 0, "7": 7, "2.0": 2, "1e1": 10, "150": 150, "999999999": 999999999} {
		var x decimal
		require.True(t, x.parse([]byte(s)))
		n, ok := x.count()
		assert.True(t, ok, s)
		assert.Equal(t, want, n, s)
	}
	for _, s := range []string{"-1", "1.5", "1e9", "1e20", "0.1"} {
		var x decimal
		require.True(t, x.parse([]byte(s)))
		_, ok := x.count()
		assert.False(t, ok, s)
	}
}
