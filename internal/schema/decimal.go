package schema

// Limits on numbers compared exactly. Within them the full validator's
// big.Rat parse of the same token succeeds (it refuses exponents beyond
// about a million), and both sides see the same value.
const (
	maxDigits   = 40     // significant digits
	maxNumLen   = 1000   // bytes in the token
	maxExponent = 100000 // magnitude of the written exponent
)

// decimal is an exact decimal number: ±0.d[0]d[1]…d[n-1] × 10^exp, with
// d[0] and d[n-1] nonzero. Zero has n == 0 and neg false.
type decimal struct {
	neg bool
	n   int
	exp int
	d   [maxDigits]byte
}

// parse sets x to the value of tok, a valid JSON number. It reports false
// if the number exceeds the limits above.
func (x *decimal) parse(tok []byte) bool {
	if len(tok) > maxNumLen {
		return false
	}
	*x = decimal{}
	i := 0
	if tok[0] == '-' {
		x.neg = true
		i++
	}
	intDigits := 0 // digits before the point
	pos := 0       // index of the current mantissa digit
	first := -1    // index of the first nonzero digit
	zeros := 0     // zeros seen since the last nonzero digit
	point := false
	for ; i < len(tok); i++ {
		c := tok[i]
		if c == '.' {
			point = true
			continue
		}
		if c == 'e' || c == 'E' {
			break
		}
		if !point {
			intDigits++
		}
		switch {
		case c == '0' && first < 0:
		case c == '0':
			zeros++
		default:
			if first < 0 {
				first = pos
			}
			if x.n+zeros >= maxDigits {
				return false
			}
			for ; zeros > 0; zeros-- {
				x.d[x.n] = '0'
				x.n++
			}
			x.d[x.n] = c
			x.n++
		}
		pos++
	}
	e := 0
	if i < len(tok) { // exponent
		i++
		eneg := false
		if tok[i] == '+' || tok[i] == '-' {
			eneg = tok[i] == '-'
			i++
		}
		for ; i < len(tok); i++ {
			e = e*10 + int(tok[i]-'0')
			if e > maxExponent {
				return false
			}
		}
		if eneg {
			e = -e
		}
	}
	if first < 0 {
		x.neg = false
		return true
	}
	x.exp = intDigits - first + e
	return true
}

// cmp compares x and y and returns -1, 0 or +1.
func (x *decimal) cmp(y *decimal) int {
	sx, sy := x.sign(), y.sign()
	if sx != sy {
		if sx < sy {
			return -1
		}
		return 1
	}
	if sx == 0 {
		return 0
	}
	c := cmpAbs(x, y)
	if sx < 0 {
		c = -c
	}
	return c
}

func (x *decimal) sign() int {
	switch {
	case x.n == 0:
		return 0
	case x.neg:
		return -1
	default:
		return 1
	}
}

// cmpAbs compares the magnitudes of nonzero x and y.
func cmpAbs(x, y *decimal) int {
	if x.exp != y.exp {
		if x.exp < y.exp {
			return -1
		}
		return 1
	}
	for k := range min(x.n, y.n) {
		if x.d[k] != y.d[k] {
			if x.d[k] < y.d[k] {
				return -1
			}
			return 1
		}
	}
	switch {
	case x.n < y.n:
		return -1
	case x.n > y.n:
		return 1
	default:
		return 0
	}
}

// count returns x as a small non-negative integer (below 1e9).
func (x *decimal) count() (int, bool) {
	if x.n == 0 {
		return 0, true
	}
	if x.neg || x.exp < x.n || x.exp > 9 {
		return 0, false
	}
	v := 0
	for k := range x.exp {
		v *= 10
		if k < x.n {
			v += int(x.d[k] - '0')
		}
	}
	return v, true
}

// boundOp is the comparison a numeric bound requires.
type boundOp uint8

const (
	opMin   boundOp = iota // minimum: x >= v
	opMax                  // maximum: x <= v
	opExMin                // exclusiveMinimum: x > v
	opExMax                // exclusiveMaximum: x < v
)

type bound struct {
	op boundOp
	v  decimal
}

func (b *bound) holds(x *decimal) bool {
	c := x.cmp(&b.v)
	switch b.op {
	case opMin:
		return c >= 0
	case opMax:
		return c <= 0
	case opExMin:
		return c > 0
	default:
		return c < 0
	}
}

// litKind is the kind of a JSON value listed in enum or const.
type litKind uint8

const (
	litOther litKind = iota // array, object, or a number beyond the limits
	litNull
	litTrue
	litFalse
	litString
	litNumber
)

type literal struct {
	kind litKind
	str  string
	num  decimal
}

// enumSet holds the values of one enum or const keyword.
type enumSet []literal

func (s enumSet) hasKind(k litKind) bool {
	for i := range s {
		if s[i].kind == k {
			return true
		}
	}
	return false
}

func (s enumSet) hasString(v []byte) bool {
	for i := range s {
		if s[i].kind == litString && s[i].str == string(v) {
			return true
		}
	}
	return false
}

func (s enumSet) hasNumber(x *decimal) bool {
	for i := range s {
		if s[i].kind == litNumber && s[i].num.cmp(x) == 0 {
			return true
		}
	}
	return false
}
