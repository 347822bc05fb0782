module memrank.test/goobserver

go 1.21
