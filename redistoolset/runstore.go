package redistoolset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/redis/go-redis/v9"
)

// RunStoreOptions configures a [RunStore].
type RunStoreOptions struct {
	// Prefix starts every key; empty means [DefaultPrefix]. A run's state
	// is the hash Prefix+"run:"+id, with its data in field "d" and its
	// version in field "v".
	Prefix string
}

// RunStore is a [toolset.RunStore] in Redis. Make one with [NewRunStore].
//
// A run's state is one hash: the data and, beside it, its version. A save
// is a Lua script that compares the version with the one expected and, if
// they match, writes the data with a new version and sets or clears the
// expiry, in one step. A new version is the server's time in microseconds,
// or the old version plus one if that is larger, so a version is never
// given twice to one run, even after its state was deleted.
type RunStore struct {
	client redis.UniversalClient
	prefix string
}

// NewRunStore returns a run store on client.
func NewRunStore(client redis.UniversalClient, opts RunStoreOptions) *RunStore {
	return &RunStore{client: client, prefix: prefixOr(opts.Prefix)}
}

var _ toolset.RunStore = (*RunStore)(nil)

// MaxRunIDBytes bounds the length of a run ID, which is part of a key.
const MaxRunIDBytes = 1024

func (s *RunStore) key(id string) (string, error) {
	if len(id) > MaxRunIDBytes {
		return "", fmt.Errorf("redistoolset: run %q: its ID is %d bytes, over the %d a key may hold", bound(id), len(id), MaxRunIDBytes)
	}
	return s.prefix + "run:" + id, nil
}

// saveScript: KEYS[1] the run's hash; ARGV data, expected version, ttl in
// milliseconds (0: none). It returns {1, new version} or {0, version found}.
var saveScript = redis.NewScript(`
local cur = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if cur ~= tonumber(ARGV[2]) then
	return {0, cur}
end
local t = redis.call('TIME')
local v = tonumber(t[1]) * 1000000 + tonumber(t[2])
if v <= cur then
	v = cur + 1
end
redis.call('HSET', KEYS[1], 'd', ARGV[1], 'v', string.format('%d', v))
local ttl = tonumber(ARGV[3])
if ttl > 0 then
	redis.call('PEXPIRE', KEYS[1], ttl)
else
	redis.call('PERSIST', KEYS[1])
end
return {1, v}
`)

// Load implements [toolset.RunStore].
func (s *RunStore) Load(ctx context.Context, id string) ([]byte, int64, error) {
	key, err := s.key(id)
	if err != nil {
		return nil, 0, err
	}
	vals, err := s.client.HMGet(ctx, key, "d", "v").Result()
	if err != nil {
		return nil, 0, fmt.Errorf("redistoolset: loading run %q: %w", bound(id), err)
	}
	d, dok := vals[0].(string)
	v, vok := vals[1].(string)
	if !dok || !vok {
		return nil, 0, nil
	}
	version, err := strconv.ParseInt(v, 10, 64)
	if err != nil || version <= 0 {
		return nil, 0, fmt.Errorf("redistoolset: loading run %q: its version %q is not a positive integer", bound(id), bound(v))
	}
	return []byte(d), version, nil
}

// Save implements [toolset.RunStore].
func (s *RunStore) Save(ctx context.Context, id string, data []byte, expectVersion int64, ttl time.Duration) (int64, error) {
	ms := int64(0)
	if ttl > 0 {
		ms = max(ttl.Milliseconds(), 1)
	}
	key, err := s.key(id)
	if err != nil {
		return 0, err
	}
	res, err := saveScript.Run(ctx, s.client, []string{key}, data, expectVersion, ms).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("redistoolset: saving run %q: %w", bound(id), err)
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("redistoolset: saving run %q: the script answered %d values, not 2", bound(id), len(res))
	}
	if res[0] != 1 {
		return 0, &toolset.RunStateConflictError{ID: id, Expected: expectVersion, Actual: res[1]}
	}
	return res[1], nil
}

// Delete implements [toolset.RunStore].
func (s *RunStore) Delete(ctx context.Context, id string) error {
	key, err := s.key(id)
	if err != nil {
		return err
	}
	if err := s.client.Del(ctx, key).Err(); err != nil {
		return fmt.Errorf("redistoolset: deleting run %q: %w", bound(id), err)
	}
	return nil
}

// bound shortens s for an error message.
func bound(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// isNil reports whether err is Redis's "no such key".
func isNil(err error) bool { return errors.Is(err, redis.Nil) }
