module cmr

go 1.19
