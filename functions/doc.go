// Package functions runs the host's functions against connections: actions
// (called through POST /action/trigger or Service.TriggerAction), syncs
// (scheduled runs that save records, read with GET /records) and on-event
// functions (run when a connection is created, validated or deleted).
//
// The package is being built (issue 14); this file grows with it.
package functions
