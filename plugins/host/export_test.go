package host

// SetAfterCheck sets a function run between a launch's checks (and hash)
// and its exec (nil: none).
func SetAfterCheck(f func(real string)) { afterCheck = f }
