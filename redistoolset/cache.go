package redistoolset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/redis/go-redis/v9"
)

// ResultCacheOptions configures a [ResultCache].
type ResultCacheOptions struct {
	// Prefix starts every key; empty means [DefaultPrefix]. An entry is
	// the key Prefix+"cache:"+hex(SHA-256(key)), and the index of entries
	// the sorted set Prefix+"cache:index".
	Prefix string
	// MaxEntries bounds the number of entries; zero means 10,000. When a
	// write would go beyond it, the oldest entries are removed.
	MaxEntries int
	// MaxValueBytes bounds the size of one entry's value; a larger value
	// is not stored. Zero means 1 MiB.
	MaxValueBytes int
	// DefaultTTL is the expiry of an entry written with no TTL; zero
	// keeps it until it is pushed out.
	DefaultTTL time.Duration
}

// ResultCache is a [toolset.ResultCache] in Redis, shared by every process
// that uses the same Redis and prefix. Make one with [NewResultCache].
//
// An entry is a string key with its expiry. Its bounds do not depend on
// the server's maxmemory policy: the cache keeps an index of its
// entries, a sorted set scored by the server's time of writing, and a
// write (one Lua script) adds the entry and removes the oldest ones beyond
// MaxEntries, first in, first out; reading an entry does not move it.
// An entry that expired stays in the index, counting against MaxEntries,
// until it is pushed out, so MaxEntries bounds the live entries. A read
// is one GETRANGE.
type ResultCache struct {
	client     redis.UniversalClient
	prefix     string
	maxEntries int
	maxValue   int
	ttl        time.Duration
}

// NewResultCache returns a result cache on client; nil opts are the
// defaults.
func NewResultCache(client redis.UniversalClient, opts *ResultCacheOptions) *ResultCache {
	if opts == nil {
		opts = new(ResultCacheOptions)
	}
	c := &ResultCache{client: client, prefix: prefixOr(opts.Prefix), maxEntries: opts.MaxEntries, maxValue: opts.MaxValueBytes, ttl: opts.DefaultTTL}
	if c.maxEntries <= 0 {
		c.maxEntries = 10000
	}
	if c.maxValue <= 0 {
		c.maxValue = 1 << 20
	}
	return c
}

var _ toolset.ResultCache = (*ResultCache)(nil)

func (c *ResultCache) key(key string) string {
	sum := sha256.Sum256([]byte(key))
	return c.prefix + "cache:" + hex.EncodeToString(sum[:])
}

// setScript: KEYS the entry and the index; ARGV the value, the ttl in
// milliseconds (0: none), and the bound on entries.
//
// The entry is indexed before it is written: a script stops at its first
// failing command, keeping what it wrote, so an index of another type
// must fail the write before the entry exists, or the entry would be
// outside every bound.
var setScript = redis.NewScript(`
local t = redis.call('TIME')
redis.call('ZADD', KEYS[2], tonumber(t[1]) * 1000000 + tonumber(t[2]), KEYS[1])
if tonumber(ARGV[2]) > 0 then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
	redis.call('SET', KEYS[1], ARGV[1])
end
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[3])
if over > 0 then
	local old = redis.call('ZPOPMIN', KEYS[2], over)
	for i = 1, #old, 2 do
		redis.call('DEL', old[i])
	end
end
return over
`)

// Get implements [toolset.ResultCache]. It reads at most MaxValueBytes
// and one more of the value (GETRANGE), so a value larger than any this
// cache writes, put there by another writer, is a miss that costs no
// more than a hit. An empty value, which no result encodes to, is a miss
// too: GETRANGE does not tell it from no value.
func (c *ResultCache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := c.client.GetRange(ctx, c.key(key), 0, int64(c.maxValue)).Bytes()
	if isNil(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redistoolset: reading the cache: %w", err)
	}
	if len(v) == 0 || len(v) > c.maxValue {
		return nil, false, nil
	}
	return v, true, nil
}

// Set implements [toolset.ResultCache]. A value over MaxValueBytes is not
// stored.
func (c *ResultCache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if len(value) > c.maxValue {
		return nil
	}
	if ttl <= 0 {
		ttl = c.ttl
	}
	ms := int64(0)
	if ttl > 0 {
		ms = max(ttl.Milliseconds(), 1)
	}
	err := setScript.Run(ctx, c.client, []string{c.key(key), c.prefix + "cache:index"}, value, ms, c.maxEntries).Err()
	if err != nil {
		return fmt.Errorf("redistoolset: writing the cache: %w", err)
	}
	return nil
}
