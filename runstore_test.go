package toolset_test

import (
	"context"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The in-memory store honours TTLs and compare-and-swap.
func TestMemoryRunStore(t *testing.T) {
	synctestRun(t, func(t *testing.T) {
		ctx := context.Background()
		s := toolset.NewMemoryRunStore()
		v1, err := s.Save(ctx, "r", []byte("a"), 0, time.Minute)
		require.NoError(t, err)
		assert.NotZero(t, v1)
		_, err = s.Save(ctx, "r", []byte("b"), 0, time.Minute)
		var ce *toolset.RunStateConflictError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, toolset.RunStateConflictError{ID: "r", Expected: 0, Actual: v1}, *ce)
		require.ErrorIs(t, err, toolset.ErrRunStateConflict)
		v2, err := s.Save(ctx, "r", []byte("b"), v1, time.Minute)
		require.NoError(t, err)
		assert.NotEqual(t, v1, v2)

		time.Sleep(59 * time.Second)
		data, v, err := s.Load(ctx, "r")
		require.NoError(t, err)
		assert.Equal(t, "b", string(data))
		assert.Equal(t, v2, v)
		time.Sleep(time.Second)
		data, v, err = s.Load(ctx, "r")
		require.NoError(t, err)
		assert.Nil(t, data, "expired")
		assert.Zero(t, v)
		_, err = s.Save(ctx, "r", []byte("c"), v2, 0)
		require.ErrorAs(t, err, &ce, "an expired state is no state")
		v3, err := s.Save(ctx, "r", []byte("c"), 0, 0)
		require.NoError(t, err)
		assert.NotContains(t, []int64{v1, v2}, v3, "versions are not reused")
		time.Sleep(time.Hour)
		data, _, err = s.Load(ctx, "r")
		require.NoError(t, err)
		assert.Equal(t, "c", string(data), "no TTL: kept")
		var stale *toolset.RunStateConflictError
		require.ErrorAs(t, s.Delete(ctx, "r", v2), &stale, "a stale version deletes nothing")
		require.NoError(t, s.Delete(ctx, "r", v3))
		data, _, err = s.Load(ctx, "r")
		require.NoError(t, err)
		assert.Nil(t, data)
	})
}
