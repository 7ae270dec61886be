// The console (being written).
