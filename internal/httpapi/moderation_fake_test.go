package httpapi

import (
	"context"

	"github.com/rankgate/rankgate/internal/gateway"
)

func (f *fakeService) RemoveMember(ctx context.Context, b gateway.BoardRef, user string, r gateway.Removal) (gateway.RemovalResult, error) {
	return gateway.RemovalResult{}, f.unexpected("RemoveMember")
}

func (f *fakeService) MemberHistory(ctx context.Context, b gateway.BoardRef, user string, limit int, cursor string) (gateway.History, error) {
	return gateway.History{}, f.unexpected("MemberHistory")
}

func (f *fakeService) PutBan(ctx context.Context, user string, r gateway.BanRequest) (gateway.BanResult, error) {
	return gateway.BanResult{}, f.unexpected("PutBan")
}

func (f *fakeService) DeleteBan(ctx context.Context, user string) (gateway.Ban, error) {
	return gateway.Ban{}, f.unexpected("DeleteBan")
}

func (f *fakeService) ListBans(ctx context.Context) (gateway.BanList, error) {
	return gateway.BanList{}, f.unexpected("ListBans")
}

func (f *fakeService) EraseMember(ctx context.Context, user string, r gateway.Erasure) (gateway.ErasureResult, error) {
	return gateway.ErasureResult{}, f.unexpected("EraseMember")
}

func (f *fakeService) ExportMember(ctx context.Context, user string) (gateway.Export, error) {
	return gateway.Export{}, f.unexpected("ExportMember")
}
