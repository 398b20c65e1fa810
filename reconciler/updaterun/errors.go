package updaterun

import (
	"errors"
	"fmt"
)

// Terminal errors abort a run for good (spec §2.8): initialization failures
// are recorded as Initialized=False, later ones as Succeeded=False. Every
// other error is retriable: the status computed so far is written and the
// controller backs off. The three message fragments below are composed
// exactly as upstream does, because users grep for them and the metrics'
// failureType is derived from them.
var errAborted = errors.New("cannot continue the updateRun")

const (
	validationFailedMsg = "failed to validate the updateRun"
	userErrorMsg        = "failed to process the request due to a client error"
	unexpectedMsg       = "unexpected behavior which cannot be handled by the controller"
)

// abortf builds a terminal error: "cannot continue the updateRun: <detail>".
func abortf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errAborted, fmt.Sprintf(format, args...))
}

// userErr is the detail of an error the user has to fix.
func userErr(format string, args ...any) string {
	return userErrorMsg + ": " + fmt.Sprintf(format, args...)
}

// unexpectedErr is the detail of an error that should not happen.
func unexpectedErr(format string, args ...any) string {
	return unexpectedMsg + ": " + fmt.Sprintf(format, args...)
}

// validationAbort is the terminal error of the helpers shared by
// initialization and validation:
// "cannot continue the updateRun: failed to validate the updateRun: <detail>".
func validationAbort(detail string) error {
	return fmt.Errorf("%w: %s: %s", errAborted, validationFailedMsg, detail)
}

// isAborted reports whether err (or any error it aggregates) is terminal.
func isAborted(err error) bool { return errors.Is(err, errAborted) }
