package sqlite

// Placeholders of the methods not written yet; each group deletes its file.

import (
	"context"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
)

// environments.Store
func (s *Store) CreateAPIKey(ctx context.Context, key *environments.APIKey) error {
	panic("sqlite: CreateAPIKey is not implemented yet")
}
func (s *Store) CreateEnvironment(ctx context.Context, env *environments.Environment) error {
	panic("sqlite: CreateEnvironment is not implemented yet")
}
func (s *Store) DeleteAPIKey(ctx context.Context, environmentID int64, id int64) error {
	panic("sqlite: DeleteAPIKey is not implemented yet")
}
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (*environments.APIKey, error) {
	panic("sqlite: GetAPIKeyByHash is not implemented yet")
}
func (s *Store) GetEnvironment(ctx context.Context, id int64) (*environments.Environment, error) {
	panic("sqlite: GetEnvironment is not implemented yet")
}
func (s *Store) GetEnvironmentByName(ctx context.Context, name string) (*environments.Environment, error) {
	panic("sqlite: GetEnvironmentByName is not implemented yet")
}
func (s *Store) ListAPIKeys(ctx context.Context, environmentID int64) ([]*environments.APIKey, error) {
	panic("sqlite: ListAPIKeys is not implemented yet")
}
func (s *Store) ListEnvironments(ctx context.Context) ([]*environments.Environment, error) {
	panic("sqlite: ListEnvironments is not implemented yet")
}
func (s *Store) ListVariables(ctx context.Context, environmentID int64) ([]environments.Variable, error) {
	panic("sqlite: ListVariables is not implemented yet")
}
func (s *Store) SetVariables(ctx context.Context, environmentID int64, vars []environments.Variable) error {
	panic("sqlite: SetVariables is not implemented yet")
}
func (s *Store) UpdateEnvironment(ctx context.Context, env *environments.Environment) error {
	panic("sqlite: UpdateEnvironment is not implemented yet")
}

// integrations.Store
func (s *Store) CreateIntegration(ctx context.Context, in *integrations.Integration) error {
	panic("sqlite: CreateIntegration is not implemented yet")
}
func (s *Store) DeleteIntegration(ctx context.Context, environmentID int64, uniqueKey string) error {
	panic("sqlite: DeleteIntegration is not implemented yet")
}
func (s *Store) GetIntegration(ctx context.Context, environmentID int64, uniqueKey string) (*integrations.Integration, error) {
	panic("sqlite: GetIntegration is not implemented yet")
}
func (s *Store) ListIntegrations(ctx context.Context, environmentID int64) ([]*integrations.Integration, error) {
	panic("sqlite: ListIntegrations is not implemented yet")
}
func (s *Store) UpdateIntegration(ctx context.Context, in *integrations.Integration) error {
	panic("sqlite: UpdateIntegration is not implemented yet")
}

// connections.Store
func (s *Store) CountConnections(ctx context.Context, environmentID int64, integrationKey string) (int, error) {
	panic("sqlite: CountConnections is not implemented yet")
}
func (s *Store) CreateConnection(ctx context.Context, c *connections.Connection) error {
	panic("sqlite: CreateConnection is not implemented yet")
}
func (s *Store) DeleteConnection(ctx context.Context, environmentID int64, integrationKey string, connectionID string) error {
	panic("sqlite: DeleteConnection is not implemented yet")
}
func (s *Store) GetConnection(ctx context.Context, environmentID int64, integrationKey string, connectionID string) (*connections.Connection, error) {
	panic("sqlite: GetConnection is not implemented yet")
}
func (s *Store) ImportConnections(ctx context.Context, items []*connections.ImportItem) error {
	panic("sqlite: ImportConnections is not implemented yet")
}
func (s *Store) ListConnections(ctx context.Context, f connections.Filter) ([]*connections.Connection, error) {
	panic("sqlite: ListConnections is not implemented yet")
}
func (s *Store) LockConnection(ctx context.Context, environmentID int64, integrationKey string, connectionID string) error {
	panic("sqlite: LockConnection is not implemented yet")
}
func (s *Store) UpdateConnection(ctx context.Context, c *connections.Connection) error {
	panic("sqlite: UpdateConnection is not implemented yet")
}

// connections.SessionStore
func (s *Store) ClaimOAuthFlow(ctx context.Context, hash []byte) (*connections.OAuthFlow, error) {
	panic("sqlite: ClaimOAuthFlow is not implemented yet")
}
func (s *Store) CompleteOAuthFlow(ctx context.Context, id int64, status string, errorType string, errorMessage string, at time.Time) error {
	panic("sqlite: CompleteOAuthFlow is not implemented yet")
}
func (s *Store) CreateConnectSession(ctx context.Context, sess *connections.Session) error {
	panic("sqlite: CreateConnectSession is not implemented yet")
}
func (s *Store) CreateOAuthFlow(ctx context.Context, f *connections.OAuthFlow) error {
	panic("sqlite: CreateOAuthFlow is not implemented yet")
}
func (s *Store) DeleteConnectSession(ctx context.Context, environmentID int64, id int64) error {
	panic("sqlite: DeleteConnectSession is not implemented yet")
}
func (s *Store) DeleteExpiredConnectSessions(ctx context.Context, before time.Time, limit int) (int, error) {
	panic("sqlite: DeleteExpiredConnectSessions is not implemented yet")
}
func (s *Store) DeleteExpiredOAuthFlows(ctx context.Context, before time.Time, limit int) (int, error) {
	panic("sqlite: DeleteExpiredOAuthFlows is not implemented yet")
}
func (s *Store) GetConnectSession(ctx context.Context, hash []byte) (*connections.Session, error) {
	panic("sqlite: GetConnectSession is not implemented yet")
}
func (s *Store) GetOAuthFlowByClientID(ctx context.Context, clientID string, sessionID int64) (*connections.OAuthFlow, error) {
	panic("sqlite: GetOAuthFlowByClientID is not implemented yet")
}
func (s *Store) IsSessionConnection(ctx context.Context, environmentID int64, id int64) (bool, error) {
	panic("sqlite: IsSessionConnection is not implemented yet")
}
func (s *Store) MarkSessionConnection(ctx context.Context, environmentID int64, id int64) error {
	panic("sqlite: MarkSessionConnection is not implemented yet")
}

// oplog.Store
func (s *Store) AppendLog(ctx context.Context, e *oplog.Entry) error {
	panic("sqlite: AppendLog is not implemented yet")
}
func (s *Store) AppendLogs(ctx context.Context, es []*oplog.Entry) error {
	panic("sqlite: AppendLogs is not implemented yet")
}
func (s *Store) ListLogs(ctx context.Context, f oplog.Filter) ([]*oplog.Entry, error) {
	panic("sqlite: ListLogs is not implemented yet")
}

// oplog.Pruner
func (s *Store) DeleteLogsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	panic("sqlite: DeleteLogsBefore is not implemented yet")
}
