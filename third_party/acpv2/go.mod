module github.com/acpbridge/acpbridge/third_party/acpv2

go 1.21
