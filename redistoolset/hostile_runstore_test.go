package redistoolset_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gotoolset/toolset/redistoolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A state larger than any run loads is refused by the store before it is
// read into memory.
func TestRunStoreLoadRefusesOversizedState(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	ctx := context.Background()
	big := strings.Repeat("x", redistoolset.MaxRunStateBytes+1)
	require.NoError(t, c.HSet(ctx, "p:run:r", "d", big, "v", "7").Err())
	store := redistoolset.NewRunStore(c, &redistoolset.RunStoreOptions{Prefix: "p:"})
	data, _, err := store.Load(ctx, "r")
	require.Error(t, err)
	assert.Nil(t, data)
	assert.Contains(t, err.Error(), "bytes")
	assert.Less(t, len(err.Error()), 400, "the error does not quote the state")
}

// A key of another type, or a hash that is not a run's state, at a run's
// key is an error for every operation of the store, not a fresh run that
// overwrites it.
func TestRunStoreKeyOfAnotherKindIsAnError(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	ctx := context.Background()
	store := redistoolset.NewRunStore(c, &redistoolset.RunStoreOptions{Prefix: "p:"})
	require.NoError(t, c.Set(ctx, "p:run:str", "x", 0).Err())
	require.NoError(t, c.RPush(ctx, "p:run:list", "x").Err())
	require.NoError(t, c.HSet(ctx, "p:run:hash", "owner", "another app").Err())
	require.NoError(t, c.HSet(ctx, "p:run:badv", "d", "{}", "v", "abc").Err())
	for _, id := range []string{"str", "list", "hash", "badv"} {
		_, _, err := store.Load(ctx, id)
		assert.Error(t, err, "Load of %s", id)
		_, err = store.Save(ctx, id, []byte(`{}`), 0, 0)
		assert.Error(t, err, "Save of %s", id)
	}
	fields, err := c.HGetAll(ctx, "p:run:hash").Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"owner": "another app"}, fields, "the foreign hash is untouched")
}

// Delete, like Save, fails for a key that holds anything but a run's
// state, and leaves it as it is.
func TestRunStoreDeleteOfAnotherKindIsAnError(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	ctx := context.Background()
	store := redistoolset.NewRunStore(c, &redistoolset.RunStoreOptions{Prefix: "p:"})
	require.NoError(t, c.Set(ctx, "p:run:str", "x", 0).Err())
	require.NoError(t, c.HSet(ctx, "p:run:hash", "owner", "another app").Err())
	for _, id := range []string{"str", "hash"} {
		assert.Error(t, store.Delete(ctx, id, 0), id)
	}
	n, err := c.Exists(ctx, "p:run:str", "p:run:hash").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
}
