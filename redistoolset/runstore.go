package redistoolset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
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

// NewRunStore returns a run store on client; nil opts are the defaults.
func NewRunStore(client redis.UniversalClient, opts *RunStoreOptions) *RunStore {
	if opts == nil {
		opts = new(RunStoreOptions)
	}
	return &RunStore{client: client, prefix: prefixOr(opts.Prefix)}
}

var _ toolset.RunStore = (*RunStore)(nil)

// MaxRunStateBytes bounds the saved state Load reads: the bound of the
// state a run loads (see [toolset.ResumeRun]). A larger state is an
// error, found before it is read.
const MaxRunStateBytes = 16 << 20

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
// A key that holds anything but a run's state (another type, a hash
// without a version, a version that is no number) is an error, and is
// left as it is.
var saveScript = redis.NewScript(`
local raw = redis.call('HGET', KEYS[1], 'v')
local cur = 0
if raw then
	cur = tonumber(raw)
	if not cur then
		return redis.error_reply('its key holds a version that is not a number')
	end
elseif redis.call('EXISTS', KEYS[1]) == 1 then
	return redis.error_reply('its key holds a hash that is not a run state')
end
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

// loadScript: KEYS[1] the run's hash; ARGV[1] the most bytes of data
// to return. It returns {0} for no state, {1} for a key that holds
// something else, {2, size} for data over the bound (which it does not
// read), or {3, version, data}. A key of another type fails it.
var loadScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return {0}
end
local v = redis.call('HGET', KEYS[1], 'v')
if not v or redis.call('HEXISTS', KEYS[1], 'd') == 0 then
	return {1}
end
local n = redis.call('HSTRLEN', KEYS[1], 'd')
if n > tonumber(ARGV[1]) then
	return {2, n}
end
return {3, v, redis.call('HGET', KEYS[1], 'd')}
`)

// Load implements [toolset.RunStore]. A state over [MaxRunStateBytes] is
// an error, and so is a key that holds anything but a run's state.
func (s *RunStore) Load(ctx context.Context, id string) ([]byte, int64, error) {
	key, err := s.key(id)
	if err != nil {
		return nil, 0, err
	}
	res, err := loadScript.Run(ctx, s.client, []string{key}, MaxRunStateBytes).Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("redistoolset: loading run %q: %w", bound(id), err)
	}
	tag, _ := res[0].(int64)
	switch {
	case tag == 0 && len(res) == 1:
		return nil, 0, nil
	case tag == 1 && len(res) == 1:
		return nil, 0, fmt.Errorf("redistoolset: loading run %q: its key %q holds a hash that is not a run state", bound(id), bound(key))
	case tag == 2 && len(res) == 2:
		return nil, 0, fmt.Errorf("redistoolset: loading run %q: its state is %v bytes, more than the %d a run loads", bound(id), res[1], MaxRunStateBytes)
	case tag != 3 || len(res) != 3:
		return nil, 0, fmt.Errorf("redistoolset: loading run %q: the script answered %d values, tagged %d", bound(id), len(res), tag)
	}
	v, _ := res[1].(string)
	d, _ := res[2].(string)
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

// deleteScript: KEYS[1] the run's hash; ARGV[1] the expected version. It
// returns {1} when it deleted the state or there was none, or {0, version
// found}. Like saveScript, it fails for a key that holds anything but a
// run's state.
var deleteScript = redis.NewScript(`
local raw = redis.call('HGET', KEYS[1], 'v')
if not raw then
	if redis.call('EXISTS', KEYS[1]) == 1 then
		return redis.error_reply('its key holds a hash that is not a run state')
	end
	return {1}
end
local cur = tonumber(raw)
if not cur then
	return redis.error_reply('its key holds a version that is not a number')
end
if cur ~= tonumber(ARGV[1]) then
	return {0, cur}
end
redis.call('DEL', KEYS[1])
return {1}
`)

// Delete implements [toolset.RunStore].
func (s *RunStore) Delete(ctx context.Context, id string, expectVersion int64) error {
	key, err := s.key(id)
	if err != nil {
		return err
	}
	res, err := deleteScript.Run(ctx, s.client, []string{key}, expectVersion).Int64Slice()
	if err != nil {
		return fmt.Errorf("redistoolset: deleting run %q: %w", bound(id), err)
	}
	if len(res) == 2 && res[0] == 0 {
		return &toolset.RunStateConflictError{ID: id, Expected: expectVersion, Actual: res[1]}
	}
	if len(res) != 1 || res[0] != 1 {
		return fmt.Errorf("redistoolset: deleting run %q: the script answered %v", bound(id), res)
	}
	return nil
}

// bound shortens s for an error message.
func bound(s string) string {
	return textcut.Clip(s, 64)
}

// isNil reports whether err is Redis's "no such key".
func isNil(err error) bool { return errors.Is(err, redis.Nil) }
