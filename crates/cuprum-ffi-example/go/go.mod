module cuprumffi

go 1.19
