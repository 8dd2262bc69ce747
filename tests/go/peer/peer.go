// Package peer is what the Go client programs of tests/go share: running one named scenario and waiting with
// bounds generous enough that a busy machine fails no scenario, only a wrong answer does.
package peer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// The flags every program takes (tests/clients/test_go_clients.py passes them); each adds its own.
var (
	Scenario  = flag.String("scenario", "", "the scenario to run")
	Bootstrap = flag.String("bootstrap", "", "PLAINTEXT host:port, a principal that may do anything")
	SASL      = flag.String("sasl", "", "SASL_PLAINTEXT host:port with the users admin/admin-secret and alice/alice-secret")
)

// Patience bounds every wait of a scenario; a whole scenario gets four times as long.
const Patience = 60 * time.Second

// Run runs the scenario named and exits: 0 after printing "ok <label>", 1 after printing what the client saw
// instead, 2 for a name not in scenarios.
func Run(scenarios map[string]func(ctx context.Context) error, name, label string) {
	run, ok := scenarios[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown scenario %q\n", name)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*Patience)
	err := run(ctx)
	cancel()
	if err != nil {
		fmt.Printf("FAIL %s: %v\n", label, err)
		os.Exit(1)
	}
	fmt.Printf("ok %s\n", label)
	os.Exit(0)
}

// WaitUntil polls done until it holds, or fails once Patience has passed or ctx ended.
func WaitUntil(ctx context.Context, done func() bool) error {
	deadline := time.Now().Add(Patience)
	for !done() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
