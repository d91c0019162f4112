package toolset_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDynamic(t *testing.T) {
	acme := toolset.NewFunction(echoTools("acme_crm")...)
	globex := toolset.NewFunction(echoTools("globex_erp", "globex_hr")...)
	perTenant := toolset.NewDynamic(func(ctx context.Context) (toolset.Toolset, error) {
		switch Tenant.Get(ctx) {
		case "acme":
			return acme, nil
		case "globex":
			return globex, nil
		case "":
			return nil, nil
		}
		return nil, errors.New("unknown tenant")
	})
	tenant := func(name string) context.Context { return newRun(t, "r", toolset.WithValue(Tenant, name)) }
	assert.Equal(t, []string{"acme_crm"}, names(t, tenant("acme"), perTenant))
	assert.Equal(t, []string{"globex_erp", "globex_hr"}, names(t, tenant("globex"), perTenant))
	assert.Equal(t, []string{"x_acme_crm"}, names(t, tenant("acme"), perTenant.Prefixed("x")))
	assert.Empty(t, names(t, tenant(""), perTenant))
	_, err := perTenant.GetTools(tenant("initech"))
	require.EqualError(t, err, "toolset: Dynamic: unknown tenant")
}
