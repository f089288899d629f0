module example.com/proj

go 1.22
