package engine

import "os"

func osGetpid() int { return os.Getpid() }
