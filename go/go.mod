module github.com/cmr-project/cmr/go

go 1.19
